"""``regcomp-lint trace``: run a model once under dynamo and report how it really compiles.

The only part of regcomp-lint that imports torch and runs user code. Pipeline, one module a step:

- ``loading``   — the model and the batch from ``FILE_OR_MODULE:FACTORY`` references
- ``capture``   — or from a training script, by hooking ``prepare``/``compile`` and the first forward
- ``devices``   — ``auto|cpu|cuda|meta``: where the model and the batch are put
- ``explain``   — ``torch._dynamo.explain`` plus the graph-break log records and counters
- ``regions``   — the region graph (networkx): module tree, call order, groups of identical blocks
- ``locate``    — which module instance and source line executed each break
- ``verdicts``  — ``fullgraph=True`` per region and for the whole model, recompiles per block
- ``recommend`` — the strategy and the plan, with reasons
- ``report``    — text and JSON reports; ``graph_output`` — dot/json/html pictures of the graph
- ``apply``     — ``apply_plan``: compile a model in place as a plan says
"""
