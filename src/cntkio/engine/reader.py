"""The one reader behind ``MinibatchSource``: a window policy, the packing modes, the checkpoint.

``MinibatchSource`` talks to :class:`Reader` only. A reader is built over a *window policy* that
decides which sequences come next and which chunks are held:

* :class:`~cntkio.engine.global_timeline.GlobalTimeline` — built-in deserializers: CNTK's block
  randomizer on one global timeline, random access, batches parsed and packed ahead;
* :class:`~cntkio.engine.local_timeline.LocalTimeline` — ``UserDeserializer``: CNTK's
  local-timeline randomizers, a window of chunks at a time (the sequence counts are known only
  once a chunk is loaded).

The reader itself owns what both share: the worker's budget (:func:`~cntkio.engine.walk.worker_budget`),
truncated-BPTT packing (slots filled from the policy's next sequences), and the checkpoint (the
policy's position keys plus the truncated-BPTT slots under ``truncatedBpttSlots``).

``parallel_sequences`` (CNTK's legacy ``nbrUttsInEachRecurrentIter``): a truncated-BPTT minibatch
has exactly that many slots whatever size is asked, each of ``truncation_length`` steps, or, with
``truncation_length`` 0, of as many steps as the call's size (the legacy readers' minibatch size
counted steps per parallel sequence). With ``group_lengths`` (CNTK's LM and LU sentence readers)
the slots hold one *group* at a time: the next sequence and the sequences of the same length
after it, up to ``parallel_sequences``, side by side, their steps in lockstep; the next group
starts when the group has ended (:meth:`Reader._form_group`).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Protocol, cast

import numpy as np

from ..constants import TBPTT_KEY, TBPTT_SWEEP_END_KEY
from ..streams import StreamInformation
from .packer import TruncatedSlots, check_frame_mode
from .walk import worker_budget
from .._log import get_logger

__all__ = ["Reader", "WindowPolicy", "GlobalTimelinePolicy", "GROUP_LOOKAHEAD", "TBPTT_PENDING_KEY"]

log = get_logger("engine.reader")

#: grouped sentences: sequences read ahead, per parallel row, while looking for a group's
#: sentences of the same length (held until a later group takes them)
GROUP_LOOKAHEAD = 64
#: checkpoint key of the sequences read ahead and not yet grouped: ``[[ref, sweep-end flag]...]``
TBPTT_PENDING_KEY = "truncatedBpttPending"


class WindowPolicy(Protocol):
    """What a reader needs of every window policy.

    ``global_timeline`` declares whether the policy is also a :class:`GlobalTimelinePolicy`
    (positions are global sample positions; sweep size, epoch end, batches packed ahead): a
    policy that says False (:class:`~cntkio.engine.local_timeline.LocalTimeline`) has none of
    those members, and the reader answers for it (sweep size None; moving the epoch end is a
    ``TypeError``).
    """

    global_timeline: bool

    def has_data(self, W: int, r: int) -> bool:
        """False when this worker gets nothing at all (a rank beyond the chunks)."""

    def no_data(self) -> None:
        """A call of a worker that gets nothing at all (after :meth:`has_data` said so)."""

    def next_minibatch(self, budget: int, W: int, r: int):
        """Sequence/frame mode: the next minibatch of ``budget`` local samples, None at the end."""

    def next_sequences(self, W: int, r: int):
        """Truncated BPTT: ``([(ref, length, {stream: dense array})], crossed a sweep end)`` of
        the next local sequence(s), None at the end. ``ref`` is JSON-able (checkpoints)."""

    def sequence(self, ref: Any):
        """``(ref, length, data)`` of a sequence named by a ``ref`` of :meth:`next_sequences`."""

    def after_truncated(self, W: int, r: int) -> None:
        """A truncated-BPTT minibatch was emitted: release what is no longer needed."""

    def release(self) -> None:
        """The epoch ended: release every chunk."""

    def position_state(self) -> dict:
        """The checkpoint keys of the position after the last minibatch returned."""

    def restore(self, state: dict) -> None:
        """Go to the position of a :meth:`position_state` (dropping what was read ahead)."""

    def close(self) -> None: ...


class GlobalTimelinePolicy(WindowPolicy, Protocol):
    """A window policy on one global timeline (``global_timeline = True``)."""

    #: the hand-off of minibatches packed in batches (:class:`~cntkio.engine.handoff.Handoff`)
    handoff: Any

    @property
    def sweep_size(self) -> int: ...

    @property
    def epoch_end(self) -> int | None: ...

    def set_epoch_end(self, end: int | None) -> None:
        """Move the epoch end to global sample position ``end`` (None: endless)."""

    def next_tensor_ready(self, budget: int, W: int, r: int, layout: Any):
        """:meth:`next_minibatch` as a :class:`~cntkio.tensor_ready.TensorMinibatch`."""

    def sweep_order(self, sweep: int):
        """Sweep ``sweep``'s delivery order as storage ordinals of the sequences."""

    def position(self) -> int:
        """The global sample position after the last minibatch returned."""

    def seek(self, pos: int) -> None:
        """Go to the first sequence starting at or after ``pos``, dropping what was read ahead."""

    def next_lengths(self, W: int, r: int, count: int):
        """Grouped sentences: the lengths of up to ``count`` next local sequences, or None."""

    def take_sequences(self, count: int, W: int, r: int) -> list:
        """Grouped sentences: the next ``count`` sequences of :meth:`next_lengths`."""


def _ref_key(ref) -> Any:
    """A hashable key of a sequence reference (an int, or a list such as ``[chunk, index]``)."""
    return tuple(ref) if isinstance(ref, list) else ref


class _Pending:
    """Grouped sentences: the sequences read ahead and not yet in a group, ``(ref, length, data,
    sweep-end flag)``, by length, each with its arrival number (timeline order)."""

    def __init__(self) -> None:
        self.by_length: dict[int, deque] = {}
        self.arrivals = 0
        #: arrival -> ``[ref, sweep-end flag]``, in arrival order (the checkpoint's list)
        self.refs: dict[int, list] = {}

    def __len__(self) -> int:
        return len(self.refs)

    def add(self, item: tuple) -> None:
        self.by_length.setdefault(int(item[1]), deque()).append((self.arrivals, item))
        self.refs[self.arrivals] = [item[0], bool(item[3])]
        self.arrivals += 1

    def take(self, rows: int) -> list:
        """The earliest sequence and the next ones of its length, up to ``rows``."""
        if not self.refs:
            return []
        length = min(self.by_length, key=lambda n: self.by_length[n][0][0])
        q = self.by_length[length]
        out = []
        for _ in range(min(rows, len(q))):
            a, item = q.popleft()
            del self.refs[a]
            out.append(item)
        if not q:
            del self.by_length[length]
        return out

    def state(self) -> list:
        """``[[ref, sweep-end flag], ...]`` in timeline order."""
        return list(self.refs.values())


class Reader:
    """Reads minibatches through a window policy (module docstring)."""

    def __init__(self, policy: WindowPolicy, stream_infos: list[StreamInformation], *,
                 truncation_length: int = 0, frame_mode: bool = False, trace_level: int = 1,
                 parallel_sequences: int = 0, group_lengths: bool = False) -> None:
        self.policy = policy
        self.T = int(truncation_length)
        self.parallel = int(parallel_sequences)
        self.group_lengths = bool(group_lengths) and self.parallel > 0
        #: grouped sentences: sequences read ahead and not yet in a group
        self.pending = _Pending()
        if self.parallel < 0 or self.T < 0:
            raise ValueError(f"parallel_sequences and truncation_length must be >= 0, found "
                             f"{self.parallel} and {self.T}")
        self.frame_mode = bool(frame_mode)
        self.trace_level = int(trace_level)
        truncated = bool(self.T or self.parallel)
        self.slots = TruncatedSlots(stream_infos, self.T or 1) if truncated else None
        #: truncated BPTT: the sequences in the slots whose fetch carried the sweep-end flag
        self.sweep_ends: set = set()

    # --- what the source asks -------------------------------------------------------------------
    @property
    def global_timeline(self) -> bool:
        return self.policy.global_timeline

    def _global(self, what: str) -> GlobalTimelinePolicy:
        policy = self.policy
        if not policy.global_timeline:
            raise TypeError(f"{what}: a local timeline has no global sample positions")
        return cast(GlobalTimelinePolicy, policy)

    @property
    def sweep_size(self) -> int | None:
        """Samples in one sweep (None on a local timeline, whose size is unknown up front)."""
        return self._global("sweep_size").sweep_size if self.policy.global_timeline else None

    @property
    def epoch_end(self) -> int | None:
        return self._global("epoch_end").epoch_end

    def next(self, size: int, W: int, r: int):
        """One minibatch dict of ``size`` samples for worker ``r`` of ``W``, or None at the end."""
        if not self.policy.has_data(W, r):
            self.policy.no_data()
            return None
        if self.slots is not None:
            return self._next_truncated(size, W, r)
        walker = getattr(self.policy, "walker", None)
        if W > 1 and walker is not None and walker.global_budget:
            return self.policy.next_minibatch(size, W, r)     # a global budget (walk.TimelineWalker)
        return self.policy.next_minibatch(worker_budget(size, W, r, self.trace_level), W, r)

    def use_global_budget(self) -> None:
        """Distributed calls take ``size`` global samples and this worker's sequences among them
        (CNTK's config readers without a local timeline; :meth:`TimelineWalker.walk`)."""
        walker = getattr(self.policy, "walker", None)
        if walker is None:
            raise TypeError("a global partition budget needs a source over built-in deserializers")
        walker.global_budget = True

    def sweep_order(self, sweep: int):
        """The storage ordinals of sweep ``sweep``'s sequences in delivery order (global only)."""
        return self._global("sweep_order").sweep_order(sweep)

    def position(self) -> int:
        """The global sample position after the last minibatch returned (global only)."""
        return int(self._global("position").position())

    def seek(self, pos: int) -> int:
        """Go to the first sequence starting at or after global position ``pos`` (global only):
        what was read ahead is dropped and truncated-BPTT slots are emptied. Returns the position
        reached."""
        policy = self._global("seek")
        policy.seek(int(pos))
        if self.slots is not None:
            self.slots.resize(0)
            self.sweep_ends = set()
            self.pending = _Pending()
        return int(policy.position())

    @property
    def supports_tensor_ready(self) -> bool:
        """Whether :meth:`next_tensor_ready` serves this reader (batches packed on a global
        timeline, not truncated BPTT)."""
        return self.policy.global_timeline and self.slots is None

    def next_tensor_ready(self, size: int, W: int, r: int, layout):
        """:meth:`next` as a :class:`~cntkio.tensor_ready.TensorMinibatch` in ``layout``, or None
        at the end (only where :attr:`supports_tensor_ready`)."""
        policy = self._global("next_tensor_ready")
        if self.slots is not None:
            raise TypeError("next_tensor_ready: truncated BPTT minibatches are packed one by one")
        if not policy.has_data(W, r):
            policy.no_data()
            return None
        return policy.next_tensor_ready(worker_budget(size, W, r, self.trace_level), W, r, layout)

    @property
    def handoff(self):
        """The policy's hand-off of packed minibatches (queue depth, errors), or None."""
        return self.policy.handoff if self.policy.global_timeline else None

    @property
    def clock(self):
        """The policy's :class:`~cntkio.engine.stats.StageClock` (seconds in parse, randomize and
        pack; bytes loaded), or None."""
        return self.policy.window.clock if self.policy.global_timeline else None

    def set_epoch_end(self, end: int | None) -> None:
        """Move the epoch end to global sample position ``end`` (None: no end). What was planned or
        prefetched under the old end is dropped; the position stays where it is."""
        self._global("set_epoch_end").set_epoch_end(end)
        self.set_state(self.get_state())

    # --- truncated BPTT -------------------------------------------------------------------------
    def _next_truncated(self, size: int, W: int, r: int):
        if self.parallel:
            slots = self.parallel
            if not self.T:                       # steps per slot = the call's size
                self.slots.T = max(1, int(size))
        else:
            slots = max(1, size // self.T)
        if W > slots:
            raise ValueError("Too many workers for minibatch size; please increase minibatch size or "
                             "decrease number of workers.")
        local_slots = slots // W + (1 if r < slots % W else 0)
        if self.group_lengths:
            return self._next_grouped(local_slots, W, r)
        dropped = self.slots.resize(local_slots)
        if any(dropped):        # a warning at every trace level (cntkio._log)
            log.warning("truncated BPTT: the number of parallel sequences went down to %d; the rest of "
                        "the sequences in the dropped slots is discarded", local_slots)
        for s in range(local_slots):
            while self.slots.needs(s):
                got = self.policy.next_sequences(W, r)
                if got is None:
                    break
                seqs, sweep_end = got
                for seq in seqs:
                    self._push(s, seq)
                    if sweep_end:
                        self.sweep_ends.add(_ref_key(seq[0]))
        if self.slots.empty():
            self.policy.release()
            return None
        mb = self.slots.emit(self._emits_sweep_end())
        self._forget_sweep_ends()
        self.policy.after_truncated(W, r)
        return mb

    def _next_grouped(self, rows: int, W: int, r: int):
        """Grouped sentences: the next ``<= T`` steps of the group in the slots, a new group
        formed when it has ended; the last minibatch of a group is as wide as its last steps."""
        slots = self.slots
        if slots.empty():
            group = self._form_group(rows, W, r)
            if not group:
                self.policy.release()
                return None
            slots.resize(0)
            slots.resize(len(group))
            for s, (ref, length, data, sweep_end) in enumerate(group):
                self._push(s, (ref, length, data))
                if sweep_end:
                    self.sweep_ends.add(_ref_key(ref))
        mb = slots.emit_group(self._emits_sweep_end())
        self._forget_sweep_ends()
        self.policy.after_truncated(W, r)
        return mb

    def _form_group(self, rows: int, W: int, r: int) -> list:
        """The next group: the first sequence read ahead (else the next one of the timeline) and
        the sequences of its length after it, up to ``rows``, in timeline order. Sequences of other
        lengths met on the way wait in :attr:`pending` for later groups; the search reads at most
        :data:`GROUP_LOOKAHEAD` sequences per row ahead (CNTK's reader searched its whole corpus)."""
        pending = self.pending
        group = pending.take(rows)
        length = group[0][1] if group else None
        cap = GROUP_LOOKAHEAD * max(1, rows)
        policy = self.policy
        bulk = cast(GlobalTimelinePolicy, policy).next_lengths if policy.global_timeline else None
        while len(group) < rows and len(pending) < cap:
            lengths = bulk(W, r, rows - len(group) + cap - len(pending)) if bulk is not None else None
            if lengths is not None and len(lengths):
                # as many sequences as the one-at-a-time loop below would take, in one step: it
                # stops when the group is full or the sequences read ahead reach the cap
                match = lengths == (length if length is not None else lengths[0])
                in_group = np.cumsum(match)
                stop = (len(group) + in_group >= rows) | \
                    (len(pending) + np.arange(1, len(lengths) + 1) - in_group >= cap)
                count = int(np.argmax(stop)) + 1 if stop.any() else len(lengths)
                items = cast(GlobalTimelinePolicy, policy).take_sequences(count, W, r)
            else:
                got = self.policy.next_sequences(W, r)
                if got is None:
                    break
                seqs, sweep_end = got
                items = [(ref, n, data, sweep_end) for ref, n, data in seqs]
            for item in items:
                n = item[1]
                if length is None:
                    length = n
                if n == length and len(group) < rows:
                    group.append(item)
                else:
                    pending.add(item)
        return group

    def _emits_sweep_end(self) -> bool:
        """Whether the minibatch about to be emitted holds the last sample of a sequence whose
        fetch carried the sweep-end flag (CNTK 2.7 flags the minibatch that ends it)."""
        if not self.sweep_ends:
            return False
        slots = self.slots
        for s, queue in enumerate(slots.queues):
            start = slots.toffset[s]
            stop = start + min(slots.T, slots.available(s))
            pos = 0
            for ref, length, _ in queue:
                if pos >= stop:
                    break
                if start < pos + length <= stop and _ref_key(ref) in self.sweep_ends:
                    return True
                pos += length
        return False

    def _forget_sweep_ends(self) -> None:
        """Keep the flags of the sequences still in the slots only."""
        if self.sweep_ends:
            held = {_ref_key(q[0]) for queue in self.slots.queues for q in queue}
            self.sweep_ends &= held

    def _push(self, slot: int, seq) -> None:
        ref, length, data = seq
        if self.frame_mode:
            check_frame_mode(np.array([length]))
        self.slots.push(slot, ref, length, data)

    # --- state ----------------------------------------------------------------------------------
    def get_state(self) -> dict:
        state = self.policy.position_state()
        if self.slots is not None:
            state[TBPTT_KEY] = self.slots.state()
            if self.pending:
                state[TBPTT_PENDING_KEY] = self.pending.state()
            if self.sweep_ends:
                state[TBPTT_SWEEP_END_KEY] = [q[0] for queue in self.slots.queues for q in queue
                                              if _ref_key(q[0]) in self.sweep_ends]
        return state

    def set_state(self, state) -> None:
        self.policy.restore(state)
        if self.slots is not None:
            self.slots.resize(0)
            self.sweep_ends = {_ref_key(ref) for ref in state.get(TBPTT_SWEEP_END_KEY) or []}
            slot_state = state.get(TBPTT_KEY) or []
            self.slots.resize(len(slot_state))
            for s, (refs, toff, offs) in enumerate(slot_state):
                for ref in refs:
                    self._push(s, self.policy.sequence(ref))
                self.slots.toffset[s] = int(toff)
                for name, v in dict(offs).items():
                    if name in self.slots.offsets[s]:
                        self.slots.offsets[s][name] = int(v)
            self.pending = _Pending()
            for ref, flag in state.get(TBPTT_PENDING_KEY) or []:
                self.pending.add((*self.policy.sequence(ref), bool(flag)))

    def close(self) -> None:
        self.policy.close()
