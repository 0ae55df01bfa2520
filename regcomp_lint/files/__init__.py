"""File I/O: reading without blocking, decoding like the interpreter, discovery, .gitignore, atomic writeback."""
