"""Compaction against a store: overlays applied at read time, `compact`, auto-compaction.

`AsyncCompactor` is the source; `sessionary._sync.compaction.runtime.Compactor` is its
generated synchronous twin. Sessions own one each; it holds no messages itself.

Reads cost what they return: the overlay index is one small document; a branch's overlay
is found by reading the path backwards from the leaf only as far as the overlay's last
message (its depth is recorded), and the protected head before the overlay's first
message. The compacted range itself is never read to show a history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sessionary.compaction._callout import AsyncCallout
from sessionary.compaction.flush import FlushRequest, add_facts, check_facts
from sessionary.compaction.guard import (
    GUARD_KEY,
    GUARD_NAMESPACE,
    Guard,
    Measure,
    cannot_text,
    describe,
    floor,
    over_budget,
    stalled_text,
)
from sessionary.compaction.overlays import (
    INDEX_KEY,
    INDEX_NAMESPACE,
    NAMESPACE,
    SUMMARY_HEADER,
    Overlay,
    candidates,
    index_entry,
    overlay_from_body,
    overlay_to_body,
    synthetic_message,
)
from sessionary.compaction.planner import (
    CompactionPlan,
    is_synthetic,
    plan_compaction,
    safe_cuts,
    summary_budget,
    summary_info,
)
from sessionary.compaction.policy import CompactionPolicy
from sessionary.compaction.summary import SummaryRequest, check_summary, previous_text
from sessionary.compaction.view import context_view
from sessionary.errors import (
    BlockLimitExceeded,
    CompactionStalled,
    InvalidInput,
    SummarizerError,
    Unsupported,
    VersionConflict,
)
from sessionary.ids import new_id
from sessionary.model import Message, TextPart, from_micros
from sessionary.providers import AsyncStoredBlock
from sessionary.records import Document, Scope
from sessionary.retention import Clock, clock_us, system_clock
from sessionary.stores.base import DOCUMENTS, AsyncStore
from sessionary.tokens import PromptParts, count_context

if TYPE_CHECKING:
    from sessionary.blocks import ContextBlock

__all__ = ["AsyncBlockSource", "AsyncCompactor", "AsyncPromptSource", "delete_namespace"]

log = logging.getLogger("sessionary.compaction")
_RETRIES = 8


_CACHED_OVERLAYS = 32
_PAGE = 200


def _entries(doc: Document | None) -> tuple[list[dict[str, Any]], int]:
    """The entries and version of an overlay index document ([] and 0 for none)."""
    if doc is None:
        return [], 0
    return list(doc.body.get("entries") or []), doc.version


async def delete_namespace(store: AsyncStore, scope: Scope, session_id: str, namespace: str) -> int:
    """Delete every session-level document of `namespace`; return how many there were."""
    keys: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_documents(scope, "session", session_id, namespace, _PAGE, cursor)
        keys.extend(doc.key for doc in page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    for key in keys:
        await store.delete_document(scope, "session", session_id, namespace, key)
    return len(keys)


class AsyncPromptSource(Protocol):
    """Returns what a request holds beside the messages (the session reads its blocks)."""

    async def __call__(self) -> PromptParts:
        """Return the system prompt, the blocks it comes from and the tool schemas."""
        ...


class AsyncBlockSource(Protocol):
    """The session's blocks, where a memory flush writes when the label is one of them."""

    count: Callable[[str], int]

    def labels(self, *kinds: str) -> list[str]:
        """Return the labels of the blocks (of the given kinds)."""
        ...

    async def read(self, label: str, version: int | None = None) -> ContextBlock:
        """Return a block as it is now."""
        ...

    async def write(self, label: str, change: Callable[[str], str], author: str) -> ContextBlock:
        """Write `change(current)` to a writable block within its limit."""
        ...


class AsyncCompactor:
    """Applies, makes and lists the compaction overlays of one session.

    Args:
        store: The session's store.
        scope: The session's scope.
        session_id: The session.
        policy: The compaction settings.
        prompt: What the estimate counts beside the messages (default: nothing).
        blocks: Returns the session's blocks, for the memory flush (default: none; the
            flush then writes the stored block of its label).
    """

    def __init__(
        self,
        store: AsyncStore,
        scope: Scope,
        session_id: str,
        policy: CompactionPolicy,
        prompt: AsyncPromptSource | None = None,
        blocks: Callable[[], AsyncBlockSource] | None = None,
    ) -> None:
        self.store = store
        self.scope = scope
        self.session_id = session_id
        self.policy = policy
        self._prompt = prompt
        self._blocks = blocks
        self._told_unsupported = False
        # Overlays are stamped by the store's clock (a manager's `clock=`), as its rows are.
        self._clock: Clock = getattr(store, "clock", system_clock)
        # An overlay is written once under a fresh id and never changed, so a copy read
        # here stays right for every process; the index still decides which ones apply.
        self._overlays: dict[str, Overlay] = {}

    # ------------------------------------------------------------------ reading

    @property
    def _has_documents(self) -> bool:
        return DOCUMENTS in self.store.capabilities

    async def _index(self) -> tuple[list[dict[str, Any]], int]:
        if not self._has_documents:
            return [], 0
        doc = await self.store.get_document(
            self.scope, "session", self.session_id, INDEX_NAMESPACE, INDEX_KEY, None
        )
        return _entries(doc)

    async def overlays(self) -> list[Overlay]:
        """Return every overlay of the session (superseded ones too), oldest first."""
        entries, _ = await self._index()
        found = []
        for entry in sorted(entries, key=lambda e: int(e["created_us"])):
            overlay = await self._overlay(str(entry["id"]))
            if overlay is not None:
                found.append(overlay)
        return found

    async def _overlay(self, overlay_id: str) -> Overlay | None:
        known = self._overlays.get(overlay_id)
        if known is not None:
            return known
        doc = await self.store.get_document(
            self.scope, "session", self.session_id, NAMESPACE, overlay_id, None
        )
        if doc is None:
            return None
        if len(self._overlays) >= _CACHED_OVERLAYS:
            self._overlays.clear()
        overlay = self._overlays[overlay_id] = overlay_from_body(overlay_id, doc.body)
        return overlay

    async def _extend(self, leaf: str | None, suffix: list[Message], need: int) -> list[Message]:
        if need <= len(suffix):
            return suffix
        if not suffix:
            return await self.store.get_path(self.scope, self.session_id, leaf, need)
        if suffix[0].parent_id is None:
            return suffix
        earlier = await self.store.get_path(
            self.scope, self.session_id, suffix[0].parent_id, need - len(suffix)
        )
        return earlier + suffix

    async def visible(self, leaf: str | None = None) -> list[Message]:
        """Return the path to `leaf` (default: the head) with its overlay applied.

        The newest overlay whose range is on the path replaces that range with its
        summary message.
        """
        shown = await self.overlaid(leaf)
        if shown is None:
            return await self.store.get_path(self.scope, self.session_id, leaf, None)
        return shown

    async def overlaid(self, leaf: str | None = None) -> list[Message] | None:
        """Return the path to `leaf` with its overlay applied, or None if none applies.

        None costs one document read when the session has no overlays at all.
        """
        entries, _ = await self._index()
        return await self._applied(leaf, entries) if entries else None

    async def recent(
        self, leaf: str | None, limit: int | None
    ) -> tuple[list[Message] | None, list[Message]]:
        """Return `overlaid(leaf)` and, when that is None, the last `limit` messages to `leaf`.

        With a `limit` and a store that has `get_path_and_document` (see
        `sessionary.stores.base`), the overlay index and the messages are one store call,
        so a session without overlays costs one; the `limit` messages read are not used
        when an overlay applies. Without a limit the whole path is read only if needed.
        """
        both = getattr(self.store, "get_path_and_document", None)
        if both is None or limit is None or not self._has_documents:
            shown = await self.overlaid(leaf)
            if shown is not None:
                return shown, []
            return None, await self.store.get_path(self.scope, self.session_id, leaf, limit)
        window, doc = await both(
            self.scope, self.session_id, leaf, limit, INDEX_NAMESPACE, INDEX_KEY
        )
        entries, _ = _entries(doc)
        shown = await self._applied(leaf, entries) if entries else None
        return shown, [] if shown is not None else window

    async def _applied(
        self, leaf: str | None, entries: list[dict[str, Any]]
    ) -> list[Message] | None:
        """The path to `leaf` with the overlay `entries` pick applied, or None if none does."""
        length = await self.store.get_path_length(self.scope, self.session_id, leaf)
        suffix: list[Message] = []
        for entry in candidates(entries, length):
            need = length - int(entry["last_depth"]) + 1
            suffix = await self._extend(leaf, suffix, need)
            if len(suffix) < need or suffix[-need].id != entry["last_id"]:
                continue
            overlay = await self._overlay(str(entry["id"]))
            if overlay is None:
                continue
            head = await self.store.get_path(self.scope, self.session_id, overlay.first_id, None)
            head = head[:-1]
            summary = synthetic_message(overlay, head[-1].id if head else None)
            return [*head, summary, *suffix[len(suffix) - need + 1 :]]
        return None

    def _view(self, visible: list[Message]) -> list[Message]:
        policy = self.policy
        return context_view(
            visible, policy.eviction, policy.max_argument_chars, policy.truncation_marker
        )

    async def context(self, leaf: str | None = None) -> list[Message]:
        """Return the visible history as a model should see it (eviction, clipping)."""
        return self._view(await self.visible(leaf))

    async def estimate(self, leaf: str | None = None) -> int:
        """Return the estimated request tokens (see `measure`) of the branch at `leaf`."""
        return await self.measure(await self.context(leaf))

    async def measure(self, shown: list[Message]) -> int:
        """Return the estimated tokens of a request with the context view `shown`.

        That is `reserve_tokens` plus the counter's count (`sessionary.tokens.count_context`)
        of the messages, the session's system prompt, its blocks and its tools' schemas.
        """
        parts = await self._prompt() if self._prompt is not None else PromptParts()
        counted = count_context(
            self.policy.counter, shown, system=parts.system, blocks=parts.blocks, tools=parts.tools
        )
        return self.policy.reserve_tokens + counted

    async def _size(self, shown: list[Message]) -> Measure:
        # The prompt is read (and counted) only when a token budget needs it.
        tokens = await self.measure(shown) if self.policy.trigger_tokens is not None else 0
        return Measure(tokens, len(shown))

    def _tail_budget(self, shown: list[Message], tokens: int) -> int:
        """The tail's token budget, given the estimate `tokens` of the context `shown`."""
        counter = self.policy.counter
        beside = tokens - sum(counter.count_message(m) for m in shown)
        return self.policy.tail_budget(beside)

    async def copy_to(self, target: AsyncCompactor, path: list[Message]) -> int:
        """Copy to `target` the overlays whose range lies on `path` (a fork); return how many.

        Raises:
            Unsupported: If either store has no documents (nothing is copied then).
        """
        entries, _ = await self._index()
        copied = 0
        for entry in sorted(entries, key=lambda e: int(e["created_us"])):
            depth = int(entry["last_depth"])
            if depth > len(path) or path[depth - 1].id != entry["last_id"]:
                continue
            overlay = await self._overlay(str(entry["id"]))
            if overlay is None:
                continue
            await target._store_overlay(overlay)
            copied += 1
        return copied

    async def clear(self) -> None:
        """Delete every overlay of the session, its index and its guard (for `clear`).

        The index goes first: an overlay left without its index entry never applies, so
        an interrupted clear cannot show a summary over messages that replaced the old
        ones under the same ids.
        """
        if not self._has_documents:
            return
        self._overlays.clear()
        await delete_namespace(self.store, self.scope, self.session_id, INDEX_NAMESPACE)
        await delete_namespace(self.store, self.scope, self.session_id, NAMESPACE)
        await delete_namespace(self.store, self.scope, self.session_id, GUARD_NAMESPACE)

    # ------------------------------------------------------------------ compacting

    async def compact(
        self,
        leaf: str | None = None,
        *,
        protect_head: int | None = None,
        tail_tokens: int | None = None,
    ) -> Overlay | None:
        """Compact the branch ending at `leaf` (default: the head); return the new overlay.

        Returns None when there is nothing to compact (a short history, or a tail that
        already fits). Originals stay stored; only the view changes.

        Raises:
            Unsupported: If the store has no documents.
            SummarizerError: If the summarizer fails; nothing is stored. (A failing
                memory flush is reported to the error hook and does not stop it.)
        """
        if not self._has_documents:
            raise Unsupported("compaction overlays need a store with documents")
        visible = await self.visible(leaf)
        shown = self._view(visible)
        if tail_tokens is None:
            tokens = await self.measure(shown) if self.policy.tail_tokens is None else 0
            tail_tokens = self._tail_budget(shown, tokens)
        plan = self._plan(shown, protect_head, tail_tokens)
        return None if plan is None else await self._apply(plan, visible)

    def _plan(
        self, shown: list[Message], protect_head: int | None, tail_tokens: int
    ) -> CompactionPlan | None:
        policy = self.policy
        return plan_compaction(
            shown,
            protect_head=policy.protect_head if protect_head is None else protect_head,
            tail_tokens=tail_tokens,
            min_tail=policy.min_tail,
            counter=policy.counter,
            max_tail=policy.tail_count(),
        )

    async def _apply(self, plan: CompactionPlan, visible: list[Message]) -> Overlay:
        """Flush (if on), summarize and store the overlay `plan` describes."""
        if self.policy.memory_flush is not None:
            await self._flush(plan, visible)
        summary = await self._summarize(plan)
        overlay = await self._make_overlay(plan, summary)
        await self._store_overlay(overlay)
        return overlay

    async def add(self, summary: str, first_id: str, last_id: str) -> Overlay:
        """Store an overlay showing `summary` in place of `first_id`..`last_id`; return it.

        The range is the path to `last_id` from `first_id` on (one message if they are
        the same), and its ends must be cuts the planner could choose
        (`sessionary.compaction.planner.safe_cuts`): no tool call before it answered
        inside it, no call inside it answered after it or still pending.

        Raises:
            Unsupported: If the store has no documents.
            InvalidInput: If the summary is blank, `first_id` is not on the path to
                `last_id`, or the range would separate a tool call from its result.
            MessageNotFound: If `last_id` is not in the session.
        """
        if not self._has_documents:
            raise Unsupported("compaction overlays need a store with documents")
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidInput("a compaction summary must be non-blank text")
        path = await self.store.get_path(self.scope, self.session_id, last_id, None)
        start = next((i for i, m in enumerate(path) if m.id == first_id), None)
        if start is None:
            raise InvalidInput(f"message {first_id!r} is not on the path to {last_id!r}")
        cuts = safe_cuts(path)
        if not (cuts[start] and cuts[len(path)]):
            raise InvalidInput(
                f"compacting {first_id!r}..{last_id!r} would separate a tool call from its "
                "result (or hide a call still waiting for one)"
            )
        visible = await self.visible(last_id)
        covered = {m.id for m in path[start:]}
        older = [summary_info(m) for m in visible if is_synthetic(m)]
        overlay = Overlay(
            id=new_id(),
            first_id=first_id,
            last_id=last_id,
            first_depth=start + 1,
            last_depth=len(path),
            summary=summary.strip(),
            role=self.policy.summary_role,
            tokens_before=await self.measure(self._view(visible)),
            tokens_after=0,
            created_at=self._now(),
            supersedes=next((o.get("id") for o in older if o.get("first_id") in covered), None),
        )
        after = await self.measure(self._view([*path[:start], synthetic_message(overlay)]))
        overlay = replace(overlay, tokens_after=after)
        await self._store_overlay(overlay)
        return overlay

    def _now(self) -> datetime:
        """The store's clock now, to the microsecond an overlay keeps."""
        return from_micros(clock_us(self._clock))

    async def _store_overlay(self, overlay: Overlay) -> None:
        await self.store.put_document(
            self.scope,
            "session",
            self.session_id,
            NAMESPACE,
            overlay.id,
            overlay_to_body(overlay),
            overlay.summary,
            "compaction",
            0,
        )
        await self._add_to_index(overlay)

    async def _summarize(self, plan: CompactionPlan) -> str:
        policy = self.policy
        previous = previous_text(plan.previous)
        compacted = plan.tokens_compacted
        request = SummaryRequest(
            plan.messages,
            previous,
            summary_budget(
                compacted,
                ratio=policy.summary_ratio,
                floor=policy.summary_floor,
                ceiling=policy.summary_ceiling,
            ),
            policy.counter,
        )
        return check_summary(await self._ask(policy.summarizer.summarize, request, "summarizer"))

    async def _make_overlay(self, plan: CompactionPlan, summary: str) -> Overlay:
        first = await self.store.get_path_length(self.scope, self.session_id, plan.first_id)
        last = await self.store.get_path_length(self.scope, self.session_id, plan.last_id)
        superseded = [m.metadata.get("sessionary.compaction", {}).get("id") for m in plan.previous]
        overlay = Overlay(
            id=new_id(),
            first_id=plan.first_id,
            last_id=plan.last_id,
            first_depth=first,
            last_depth=last,
            summary=summary,
            role=self.policy.summary_role,
            tokens_before=plan.tokens_before,
            tokens_after=0,
            created_at=self._now(),
            supersedes=superseded[0] if superseded else None,
        )
        shown = self.policy.counter.count_message(synthetic_message(overlay))
        return replace(overlay, tokens_after=plan.tokens_kept + shown)

    async def _add_to_index(self, overlay: Overlay) -> None:
        def add(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [*entries, index_entry(overlay)]

        if not await self._edit_index(add):
            raise VersionConflict(
                "the overlay index kept changing; the overlay is stored unindexed"
            )

    async def _edit_index(
        self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
    ) -> bool:
        """Write `change(entries)` as the overlay index, retrying lost races; False if all lost."""
        for _ in range(_RETRIES):
            entries, version = await self._index()
            edited = change(entries)
            if edited == entries:
                return True
            try:
                await self.store.put_document(
                    self.scope,
                    "session",
                    self.session_id,
                    INDEX_NAMESPACE,
                    INDEX_KEY,
                    {"entries": edited},
                    "",
                    "compaction",
                    version,
                )
                return True
            except VersionConflict:
                continue
        return False

    async def forget(self, deleted: list[str]) -> None:
        """Drop the overlays whose range ended in a deleted message (after a delete).

        Such an overlay can never apply again to what is stored, and must not apply to
        a later message that reuses the id. The index entry goes first, as in `clear`.

        Raises:
            VersionConflict: If the overlay index kept changing.
        """
        if not self._has_documents or not deleted:
            return
        gone = set(deleted)
        dropped: list[str] = []

        def drop(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            dropped[:] = [str(e["id"]) for e in entries if e["last_id"] in gone]
            return [e for e in entries if e["last_id"] not in gone]

        if not await self._edit_index(drop):
            raise VersionConflict("the overlay index kept changing; no overlay was dropped")
        for overlay_id in dropped:
            self._overlays.pop(overlay_id, None)
            await self.store.delete_document(
                self.scope, "session", self.session_id, NAMESPACE, overlay_id
            )

    async def _flush(self, plan: CompactionPlan, visible: list[Message]) -> None:
        """Append the range's durable facts to the memory block; report, never raise."""
        try:
            await self._flush_facts(plan, visible)
        except Exception as exc:
            self.report(exc)

    async def _flush_facts(self, plan: CompactionPlan, visible: list[Message]) -> None:
        flush = self.policy.memory_flush
        assert flush is not None
        # The originals, not the context view: previews and clipped arguments are not facts.
        originals = tuple(m for m in visible[plan.start : plan.end] if not is_synthetic(m))
        source = self._blocks() if self._blocks is not None else None
        stored = AsyncStoredBlock(self.store, self.scope, flush.level, self.session_id, flush.label)
        limit: int | None = None
        if source is not None and flush.label in source.labels():
            block = await source.read(flush.label)
            existing, limit = block.content, block.limit
        else:
            source, existing = None, await stored.get() or ""
        request = FlushRequest(originals, existing)
        facts = check_facts(await self._ask(flush.extractor.extract, request, "memory extractor"))
        count = source.count if source is not None else None
        if add_facts(existing, facts, limit=limit, count=count)[0] == existing:
            return
        left: list[str] = []

        def change(current: str) -> str:
            content, missed = add_facts(current, facts, limit=limit, count=count)
            left[:] = missed
            return content

        if source is not None:
            await source.write(flush.label, change, "compaction")
        else:
            await stored.update(change, "compaction")
        if left:
            raise BlockLimitExceeded(
                f"the memory flush left out {len(left)} facts that did not fit block "
                f"{flush.label!r}'s limit of {limit} tokens"
            )

    async def _ask(self, method: Callable[[Any], Any], request: object, what: str) -> object:
        """Call a summarizer's or extractor's method; any failure is a SummarizerError.

        The call goes through `AsyncCallout` (`sessionary.compaction._callout`): async code
        runs a synchronous method in a worker thread, so a long summary never holds the
        event loop; sync code calls it directly.
        """
        try:
            result = await AsyncCallout.call(method, request)
        except SummarizerError:
            raise
        except Exception as exc:
            raise SummarizerError(f"the {what} failed: {exc!r}") from exc
        return result

    # ------------------------------------------------------------------ automatic

    async def after_append(self) -> Overlay | None:
        """Compact if the context is over budget and the guard allows; never raise.

        See `sessionary.compaction.guard` for when it holds off. Errors (and the
        `CompactionStalled` warning) go to the policy's error hook.
        """
        policy = self.policy
        if policy.trigger_tokens is None and policy.trigger_messages is None:
            return None
        if not self._has_documents:
            if not self._told_unsupported:
                self._told_unsupported = True
                self.report(Unsupported("automatic compaction needs a store with documents"))
            return None
        try:
            return await self._auto()
        except Exception as exc:
            self.report(exc)
            return None

    async def _auto(self) -> Overlay | None:
        visible = await self.visible()
        shown = self._view(visible)
        now = await self._size(shown)
        if not over_budget(self.policy, now):
            return None
        guard = await self._guard()
        ids = [m.id for m in shown]
        if guard is not None and guard.holds(self.policy, now, ids):
            return None
        prior = guard if guard is not None and guard.speaks_for(self.policy, now, ids) else None
        plan = self._plan(shown, None, self._tail_budget(shown, now.tokens))
        empty = Message(role=self.policy.summary_role, parts=[TextPart(SUMMARY_HEADER)])
        least = None if plan is None else floor(plan, now, self.policy.counter.count_message(empty))
        if plan is None or least is None or over_budget(self.policy, least):
            await self._hold(shown, now, cannot_text(least), prior, stalled=True)
            return None
        try:
            overlay = await self._apply(plan, visible)
        except Exception:
            await self._hold(shown, now, "the last automatic compaction failed", prior)
            raise
        after_view = [*shown[: plan.start], synthetic_message(overlay), *shown[plan.end :]]
        after = await self._size(after_view)
        if over_budget(self.policy, after):
            reason = f"a compaction left {describe(after)}, still over budget"
            await self._hold(after_view, after, reason, prior, stalled=True)
        elif guard is not None:
            await self._delete_guard()
        return overlay

    async def _guard(self) -> Guard | None:
        doc = await self.store.get_document(
            self.scope, "session", self.session_id, GUARD_NAMESPACE, GUARD_KEY, None
        )
        return None if doc is None else Guard.from_body(doc.body)

    async def _hold(
        self,
        shown: list[Message],
        now: Measure,
        reason: str,
        prior: Guard | None,
        *,
        stalled: bool = False,
    ) -> None:
        """Disarm automatic compaction at `now`; warn if it newly stalled."""
        warned = prior is not None and prior.warned
        if stalled and not warned:
            warned = True
            self.report(CompactionStalled(stalled_text(self.policy, self.session_id, now, reason)))
        guard = Guard(shown[-1].id if shown else None, now, reason, warned)
        await self.store.put_document(
            self.scope, "session", self.session_id, GUARD_NAMESPACE, GUARD_KEY,
            guard.to_body(), "", "compaction", None,
        )  # fmt: skip

    async def _delete_guard(self) -> None:
        await self.store.delete_document(
            self.scope, "session", self.session_id, GUARD_NAMESPACE, GUARD_KEY
        )

    def report(self, error: BaseException) -> None:
        """Hand `error` to the policy's error hook (or log it); never raise."""
        hook = self.policy.on_error
        if hook is None:
            if isinstance(error, CompactionStalled):
                log.warning("%s", error)
            else:
                log.warning("automatic compaction failed: %r", error)
            return
        try:
            hook(error)
        except Exception as hook_error:
            log.warning("the compaction error hook failed: %r", hook_error)
