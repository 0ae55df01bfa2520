"""The lint pipeline: settings, discovery to findings, the per-file engine, the cache, suppressions and fixes."""
