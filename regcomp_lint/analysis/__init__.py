"""The per-file semantic model every rule and the fixer read: names, bindings, tensors, models, reachability."""
