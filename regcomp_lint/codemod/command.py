"""The libcst codemod: plan the conversion from the metadata, then apply it in one pass.

Imports are added through libcst's ``AddImportsVisitor`` (scheduled through its static method,
not the ``self.add_needed_import`` helper, which libcst only gained in 1.9; ``imports.py`` then
moves them into the script's third-party group), and the ones the conversion made unused are
dropped by ``imports.drop_unused_imports`` in one pass over the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, ScopeProvider

from regcomp_lint.codemod.accelerated import AcceleratePlanner
from regcomp_lint.codemod.distribution import find_distribution
from regcomp_lint.codemod.edits import AFTER, UNDER_COMMENTS, EditPlan, comment_line, missing_comments, rescued_lines
from regcomp_lint.codemod.imports import TopImportsAdder, drop_unused_imports, place_added_imports
from regcomp_lint.codemod.options import ConvertOptions
from regcomp_lint.codemod.outside_accelerator import refuse_an_accelerator_from_elsewhere
from regcomp_lint.codemod.plain import PlainPlanner
from regcomp_lint.codemod.rewrites import Conversion, accelerator_calls
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.source_metadata import SourceMetadata, release_scopes, resolve_scopes
from regcomp_lint.codemod.tree import Tree


def _leading_lines(stmt: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    """The blank and comment lines above a statement of a block (libcst types a block's body as
    ``BaseStatement``, whose two kinds both have them)."""
    assert isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return stmt.leading_lines


def _blank_only(lines) -> bool:
    return bool(lines) and all(line.comment is None for line in lines)


def plan_conversion(tree: Tree, options: ConvertOptions) -> Conversion:
    """Decide every edit, or raise :class:`Refusal`."""
    distribution = find_distribution(tree)
    if distribution.blockers:
        raise Refusal(
            f"not converted: {distribution.blockers[0]}; Accelerate sets up distribution itself, so port it by hand"
        )
    constructions = accelerator_calls(tree)
    if constructions:
        if distribution.data_parallel:  # its own process-group set-up may stay (what the conversion keeps)
            raise Refusal(
                f"it uses Accelerate and also wraps the model by hand ({distribution.describe(tree)}); "
                "remove the wrap first: prepare() wraps the model"
            )
        return AcceleratePlanner(tree, options, constructions).plan()
    refuse_an_accelerator_from_elsewhere(tree)
    return PlainPlanner(tree, options, distribution).plan()


class ConvertToAccelerate(CodemodCommand, cst.CSTTransformer):
    """A visitor-based codemod command without libcst's matcher machinery (it decorates no
    method with matchers, and building that machinery cost about 20 ms a file)."""

    DESCRIPTION = (
        "Move a PyTorch training script onto Accelerate: TorchDynamoPlugin, prepare(), accelerator.backward()."
    )
    METADATA_DEPENDENCIES = (ParentNodeProvider, PositionProvider, ScopeProvider)

    def __init__(self, context: CodemodContext, options: ConvertOptions) -> None:
        CodemodCommand.__init__(self, context)
        cst.CSTTransformer.__init__(self)
        self.options = options
        self.plan = EditPlan()
        self.notes: list[str] = []
        self._touched: set[cst.CSTNode] = set()
        self.unused_imports: list[tuple[str, str | None, str | None]] = []
        self._metadata: SourceMetadata | None = None
        #: why nothing was changed, when the planner says (an Accelerate script with its plugin)
        self.unchanged: str | None = None

    def transform_module(self, tree: cst.Module, metadata: SourceMetadata | None = None) -> cst.Module:
        """Convert ``tree`` (a module straight from ``cst.parse_module``: no node appears twice in
        it, so libcst's defensive deep copy is skipped), then add and remove the imports; the
        added ones move into the third-party group. ``metadata``: the tree's parents and
        positions when the caller already printed it (else worked out here)."""
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        self._metadata = metadata if metadata is not None else SourceMetadata(tree)
        self._metadata.seed(wrapper)  # libcst's ParentNodeProvider and PositionProvider, without their passes
        resolve_scopes(wrapper, self._metadata.code, self._metadata)  # ScopeProvider, without libcst's extra visits
        try:
            with self.resolve(wrapper):
                self.context = replace(self.context, wrapper=wrapper)
                try:
                    converted = self.transform_module_impl(wrapper.module)
                finally:
                    self.context = replace(self.context, wrapper=None)
        finally:
            release_scopes(wrapper)  # (asked by nothing below)
        if AddImportsVisitor.CONTEXT_KEY in self.context.scratch:
            converted = converted.visit(TopImportsAdder(self.context))
        converted = drop_unused_imports(converted, self.unused_imports)
        return place_added_imports(tree, converted)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        assert self.context.wrapper is not None
        metadata = self._metadata
        view = Tree(
            self.context.wrapper,
            self.context.filename,
            text=metadata.code if metadata else None,
            preorder=metadata.preorder() if metadata else None,
        )
        conversion = plan_conversion(view, self.options)
        self.plan, self.notes, self.unchanged = conversion.edits, conversion.notes, conversion.unchanged
        if self.plan.empty:
            return tree
        # the statements an edit happens in: only they can lose a comment (checking every
        # statement of a large file for lost comments made the fixer quadratic)
        self._touched = set()
        for node in [*self.plan.replace, *self.plan.remove, *self.plan.insert]:
            for anc in (node, *view.ancestors(node)):
                if anc in self._touched:
                    break
                self._touched.add(anc)
        for module, obj in conversion.imports:
            AddImportsVisitor.add_needed_import(self.context, module, obj)
        self.unused_imports = conversion.unused_imports
        return tree.visit(self)

    def on_visit(self, node: cst.CSTNode) -> bool:
        # a subtree without an edit comes back as it is: not rebuilding it keeps the pass linear
        # in the edits' paths instead of in the whole file
        return node in self._touched and super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        if original_node not in self._touched:
            # (libcst calls on_leave for the nodes on_visit kept out too: every edit's node, the
            # statements and blocks it is in, is touched, so nothing below applies to the others)
            return updated_node
        updated = super().on_leave(original_node, updated_node)
        if isinstance(original_node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            updated = self._drop_small_statements(original_node, updated)
        for edit in self.plan.replace.get(original_node, ()):
            updated = edit(updated)  # type: ignore[arg-type]
        # (a block's updated node is a block of the same kind)
        if isinstance(original_node, (cst.Module, cst.IndentedBlock)) and isinstance(
            updated, (cst.Module, cst.IndentedBlock)
        ):
            updated = self._rebuild_block(original_node, updated)
        if (
            isinstance(original_node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
            and original_node in self._touched
        ):
            lost = missing_comments(original_node, updated)  # type: ignore[arg-type]
            if lost:
                updated = updated.with_changes(leading_lines=[*updated.leading_lines, *map(comment_line, lost)])  # type: ignore[union-attr]
        return updated

    def _drop_small_statements(self, original, updated):
        kept = [new for old, new in zip(original.body, updated.body, strict=True) if old not in self.plan.remove]
        if len(kept) == len(updated.body):
            return updated
        if kept:
            last = kept[-1]
            kept[-1] = last.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(body=kept or [cst.Pass()])

    def _rebuild_block(self, original: cst.Module | cst.IndentedBlock, updated: cst.Module | cst.IndentedBlock):
        inserts = self.plan.insert.get(original, {})
        if not inserts and not any(stmt in self.plan.remove for stmt in original.body):
            return updated
        body: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []

        def emit(stmt: cst.BaseStatement) -> None:
            nonlocal pending
            if pending:
                stmt = stmt.with_changes(leading_lines=[*pending, *_leading_lines(stmt)])
                pending = []
            body.append(stmt)

        for index, (old, new) in enumerate(zip(original.body, updated.body, strict=True)):
            groups = inserts.get(index, [])
            taker = next((glue for glue, _ in groups if glue != AFTER), None)
            if (
                old not in self.plan.remove
                and taker is not None
                and (_blank_only(_leading_lines(new)) or (taker == UNDER_COMMENTS and _leading_lines(new)))
            ):
                # statements glued to `new` go where its blank lines (and, under its comments, those
                # comment lines) were; `new` follows them directly
                moved, glued = False, []
                for glue, stmts in groups:
                    if glue != AFTER and not moved:
                        stmts, moved = [stmts[0].with_changes(leading_lines=_leading_lines(new)), *stmts[1:]], True
                    glued.append((glue, stmts))
                groups = glued
                new = new.with_changes(leading_lines=[])
            for _, stmts in groups:
                for stmt in stmts:
                    emit(stmt)
            if old in self.plan.remove:
                pending.extend(rescued_lines(new))
                continue
            emit(new)
        for _, stmts in inserts.get(len(original.body), []):
            for stmt in stmts:
                emit(stmt)
        if not body and isinstance(updated, cst.IndentedBlock):
            emit(cst.SimpleStatementLine(body=[cst.Pass()]))
        return updated.with_changes(body=body, footer=[*pending, *updated.footer])
