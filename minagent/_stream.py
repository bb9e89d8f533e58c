"""`ResponseStream`: a single-consumption stream of updates with a cached final response
(spec/stream.md).

Rules
-----
1. Nothing touches the source before the stream is first used (ST-2); every update is
   delivered once in total (ST-3), and the final response is computed once (ST-5).
2. Whichever way the stream ends, its cleanup hooks run exactly once and the source is
   closed (ST-6, ST-7).
3. How the source is read is private to this module; `_take_over` lets a reader pull a
   lent stream that adds only its recorder (ST-51) at its source. A caller only
   iterates, awaits, finalises or closes.

Theory of operation (spec/stream.md, ST-1 .. ST-12)
----------------------------------------------------
A stream wraps a *source*: an async iterable, or an awaitable that resolves to one.
Nothing touches the source until the stream is first pulled, awaited or finalised
(ST-2).

Life cycle::

    new --pull/await--> open --source exhausted--> done (cleanup, then auto-finalise)
                          |---source raised-------> failed (cleanup; the error is kept)
                          '---aclose()/early exit--> closed (source closed, cleanup)

* Every raw update is recorded *before* the transform hooks run; transform hooks change
  only what the consumer sees, the finalizer always receives the raw updates (ST-4).
* The final response is computed once: inner stream's final response first (if this
  stream wraps another), then the finalizer (or the inner result, or the list of
  updates), then the result hooks in order; a hook returning None keeps the previous
  value (ST-5, ST-9).
* Consumers in several tasks take turns (ST-13): only one awaits the source at a time
  (the others wait for their turn), each update goes to one of them, and the final
  response is computed once and shared, also when two tasks finalise at the same moment.

Each ``async for`` gets its own small generator that pulls from the shared source. If
the consumer leaves the loop early, the generator is closed (explicitly through
``aclose()`` / ``async with``, or by the event loop when the abandoned generator is
collected) and, if it was still the stream's current consumer, closes the source and
runs cleanup (ST-7). A later consumer that starts before that close
(``get_final_response()``) simply takes over.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Sequence,
)
from typing import Any, Generic, NamedTuple, TypeVar, cast

from ._exceptions import StreamError

__all__ = ["Handoff", "ResponseStream"]

logger = logging.getLogger("minagent")

TUpdate = TypeVar("TUpdate")
TFinal = TypeVar("TFinal")
TOuter = TypeVar("TOuter")
TOuterFinal = TypeVar("TOuterFinal")

TransformHook = Callable[[Any], Any]
CleanupHook = Callable[[], Any]
ResultHook = Callable[[Any], Any]
Source = AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]

_NEW, _OPEN, _DONE, _FAILED, _CLOSED = "new", "open", "done", "failed", "closed"


# the recorder of a stream that keeps no updates (ST-14): a C-level no-op, no Python
# frame per update
_ignore: Callable[[Any], None] = collections.deque(maxlen=0).append


class Handoff:
    """What a source yields to lend its stream another: read in its place, each update
    through ``transform`` (None drops it), until it ends (ST-51); the tool loop lends
    each model call's."""

    __slots__ = ("stream", "transform")

    def __init__(
        self,
        stream: ResponseStream[Any, Any],
        transform: Callable[[Any], Any] | None = None,
    ) -> None:
        self.stream, self.transform = stream, transform


class _Lent(NamedTuple):
    stream: ResponseStream[Any, Any]
    transform: Callable[[Any], Any] | None
    record: Callable[[Any], Any]  # its recorder, when read at its source
    reader: AsyncGenerator[Any, None] | None  # its own reader, when it has hooks


_ENDED = object()  # the source ended when the lent stream's error was thrown into it


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


class ResponseStream(Generic[TUpdate, TFinal]):
    """An async-iterable of updates that finalises into one response."""

    __slots__ = (
        "_busy",
        "_cleaned",
        "_cleanup_hooks",
        "_consumer",
        "_error",
        "_final",
        "_finalizer",
        "_finalizing",
        "_has_final",
        "_inner",
        "_iterating",
        "_iterator",
        "_lent",
        "_map",
        "_recorder",
        "_result_hooks",
        "_source",
        "_state",
        "_step",
        "_transform_hooks",
        "_updates",
        "_waiters",
    )

    def __init__(
        self,
        source: AsyncIterable[TUpdate] | Awaitable[AsyncIterable[TUpdate]],
        *,
        finalizer: Callable[[Sequence[TUpdate]], TFinal | Awaitable[TFinal]]
        | None = None,
        transform_hooks: Sequence[TransformHook] | None = None,
        cleanup_hooks: Sequence[CleanupHook] | None = None,
        result_hooks: Sequence[ResultHook] | None = None,
    ) -> None:
        if not (hasattr(source, "__aiter__") or inspect.isawaitable(source)):
            raise TypeError(
                f"ResponseStream needs an async iterable or an awaitable of one, got {type(source).__name__}"
            )
        self._source: Any = source
        self._iterator: AsyncIterator[Any] | None = None
        self._inner: ResponseStream[Any, Any] | None = (
            source if isinstance(source, ResponseStream) else None
        )
        self._finalizer = finalizer
        self._transform_hooks: list[TransformHook] = list(transform_hooks or ())
        self._cleanup_hooks: list[CleanupHook] = list(cleanup_hooks or ())
        self._result_hooks: list[ResultHook] = list(result_hooks or ())
        self._updates: list[TUpdate] = []
        # takes each raw update: the list (ST-4), a fold, or nothing for a stream that
        # keeps none (ST-14)
        self._recorder: Callable[[Any], Any] = self._updates.append
        self._state = _NEW
        self._cleaned = False
        self._consumer: object = None
        self._error: BaseException | None = None
        self._final: Any = None
        self._has_final = False
        self._map: Callable[[Any], Any] | None = None
        self._busy = False  # a consumer is awaiting the source's next update (ST-13)
        self._waiters: list[asyncio.Future[None]] = []
        self._finalizing: asyncio.Future[None] | None = None
        # the task whose `async for` is active (ST-13)
        self._iterating: asyncio.Task[Any] | None = None
        self._step: Callable[[], Awaitable[Any]] = None  # type: ignore[assignment]  # the source's, or a lent stream's
        # a stream the source handed over, read in its place
        self._lent: _Lent | None = None

    # -- construction helpers -------------------------------------------------------------------

    @classmethod
    def from_awaitable(
        cls, awaitable: Awaitable[AsyncIterable[TUpdate]]
    ) -> ResponseStream[TUpdate, TFinal]:
        """A stream whose source is produced by ``awaitable``, awaited on first use
        (ST-2).

        When the awaitable yields another `ResponseStream`, this stream's final response
        is that stream's final response.
        """
        return cls(awaitable)

    def map(
        self,
        transform: Callable[[TUpdate], TOuter | Awaitable[TOuter]],
        finalizer: Callable[[Sequence[TOuter]], TOuterFinal | Awaitable[TOuterFinal]],
    ) -> ResponseStream[TOuter, TOuterFinal]:
        """A new stream over this one's (transformed) updates, mapped one by one
        (ST-10).

        Finalising the new stream finalises this one first (its finalizer and result
        hooks run), then runs ``finalizer`` over the mapped updates.
        """
        return ResponseStream._mapping(self, transform, finalizer)

    def flat_map(
        self,
        transform: Callable[[TUpdate], Any],
        finalizer: Callable[[Sequence[TOuter]], TOuterFinal | Awaitable[TOuterFinal]],
    ) -> ResponseStream[TOuter, TOuterFinal]:
        """`map` where each update becomes zero or more updates (an iterable, or an
        awaitable of one, ST-17)."""

        async def expanded() -> AsyncIterator[TOuter]:
            async for update in self:
                for item in await _call(transform, update):
                    yield item

        outer: ResponseStream[TOuter, TOuterFinal] = ResponseStream(
            expanded(), finalizer=finalizer
        )
        outer._inner = self  # ST-10: finalising it finalises this one first
        return outer

    def with_finalizer(
        self,
        finalizer: Callable[[Sequence[TUpdate]], TOuterFinal | Awaitable[TOuterFinal]],
    ) -> ResponseStream[TUpdate, TOuterFinal]:
        """A stream over this one's updates with another finalizer; this one still
        finalises first (ST-17)."""
        return ResponseStream(self, finalizer=finalizer)

    @staticmethod
    def _mapping(
        source: ResponseStream[Any, Any] | Awaitable[ResponseStream[Any, Any]],
        transform: Callable[[Any], Any],
        finalizer: Callable[[Sequence[Any]], Any],
        *,
        keep: bool = True,
    ) -> ResponseStream[Any, Any]:
        """A stream that maps the updates of ``source`` (a stream, or an awaitable of
        one) in its own consumer loop: no extra generator between the two streams, one
        frame less per update."""
        outer: ResponseStream[Any, Any] = ResponseStream(source, finalizer=finalizer)
        outer._map = transform
        if not keep:
            outer._recorder = _ignore
        return outer

    @classmethod
    def over(
        cls, source: AsyncIterable[TUpdate], fold: Any
    ) -> ResponseStream[TUpdate, Any]:
        """A stream that folds each raw update into ``fold`` as it passes
        (``fold.add(update)``) and finalises to ``fold.result()``: what the final
        response needs is kept, not the updates (ST-14)."""
        stream: ResponseStream[TUpdate, Any] = cls(
            source, finalizer=lambda _updates: fold.result()
        )
        stream._recorder = fold.add
        return stream

    @classmethod
    def of_run(
        cls,
        source: AsyncIterable[TUpdate],
        final: Callable[[], TFinal | Awaitable[TFinal]],
    ) -> ResponseStream[TUpdate, TFinal]:
        """A stream whose final response comes from the work itself (``final()``), not
        from its updates: it keeps no list of them (ST-14)."""
        stream: ResponseStream[TUpdate, TFinal] = cls(
            source, finalizer=lambda _updates: final()
        )
        stream._recorder = _ignore
        return stream

    def with_transform_hook(
        self, hook: TransformHook
    ) -> ResponseStream[TUpdate, TFinal]:
        """Add a hook that rewrites each update the consumer sees (None keeps it).
        Returns self."""
        self._transform_hooks.append(hook)
        return self

    def with_result_hook(self, hook: ResultHook) -> ResponseStream[TUpdate, TFinal]:
        """Add a hook that rewrites the final response (None keeps it). Returns self."""
        if self._has_final:
            raise StreamError(
                "the final response was already computed; add result hooks before finalising"
            )
        self._result_hooks.append(hook)
        return self

    def with_cleanup_hook(self, hook: CleanupHook) -> ResponseStream[TUpdate, TFinal]:
        """Add a hook that runs once when the stream ends in any way. Returns self."""
        if self._cleaned:
            raise StreamError(
                "the stream has already ended; add cleanup hooks before it does"
            )
        self._cleanup_hooks.append(hook)
        return self

    # -- consumption ----------------------------------------------------------------------------

    @property
    def updates(self) -> list[TUpdate]:
        """The raw (pre-transform) updates received so far (none for a stream that keeps
        none, ST-14)."""
        return list(self._updates)

    def __aiter__(self) -> AsyncGenerator[TUpdate, None]:
        return self._consume(iterating=True)

    def _plain(self) -> bool:
        """Unstarted, no transform hook, no mapping, and a source iterable as it is."""
        plain = self._state == _NEW and not self._transform_hooks and self._map is None
        return plain and hasattr(self._source, "__aiter__")

    def _take_over(
        self,
    ) -> tuple[Callable[[], Awaitable[Any]], Callable[[Any], Any]] | None:
        """Open a stream that adds only its recorder for a reader outside it, which
        pulls its source's step and records each update (ST-51), and fails it with
        `_fail`. None if it adds more."""
        if not (self._plain() and self._inner is None and not self._cleanup_hooks):
            return None
        self._state = _OPEN
        self._iterator = iterator = aiter(self._source)
        self._step = iterator.__anext__
        return self._step, self._recorder

    def __await__(self) -> Generator[Any, None, ResponseStream[TUpdate, TFinal]]:
        return self._await_source().__await__()

    async def _await_source(self) -> ResponseStream[TUpdate, TFinal]:
        if self._state == _NEW:
            try:
                await self._open()
            except BaseException as exc:
                await self._fail(exc)
                raise
        return self

    async def __aenter__(self) -> ResponseStream[TUpdate, TFinal]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def get_final_response(self) -> TFinal:
        """Consume what is left, then finalise once and cache the result (ST-5)."""
        if not self._has_final:
            other = self._iterating
            if (
                other is not None
                and other is not asyncio.current_task()
                and not other.done()
            ):
                # ST-13: let the iterating task read every update
                await self._wait_while(self._other_iterating)
            if self._state in (_NEW, _OPEN):
                async for _ in self._consume():  # finalises on exhaustion
                    pass
            if self._error is not None:
                raise self._error
            if self._state == _CLOSED:
                raise StreamError(
                    "the stream was closed before it finished; there is no final response"
                )
            await self._finalize()
        return cast(TFinal, self._final)

    async def aclose(self) -> None:
        """End the stream now: close the source and run cleanup (ST-7). Idempotent."""
        if self._state in (_DONE, _FAILED, _CLOSED):
            return
        started = self._state == _OPEN
        self._state = _CLOSED
        self._wake_all()
        closers: list[Callable[[], Awaitable[None]]] = []
        if started and not self._busy:
            closers.append(self._close_source)
        elif started:
            # ST-13: another task is inside the source's step; it closes the source when
            # the step returns
            pass
        elif inspect.iscoroutine(self._source):
            self._source.close()
        # ST-10: also when this stream never pulled from the inner one
        if self._inner is not None:
            closers.append(self._inner.aclose)
        await self._end(None, closers)

    async def _open(self) -> AsyncIterator[Any] | None:
        """The source's iterator, opened once. Opening awaits the source (an agent's
        middleware may await anything first), so it takes the one-reader-at-a-time
        turn like a pull (ST-13): a consumer that arrives while another opens waits
        for that opening instead of opening the source a second time. None when the
        stream ended (failed or closed) while this consumer waited."""
        if self._iterator is None and self._busy:
            await self._wait_while(lambda: self._busy)
            if self._iterator is not None or self._state != _OPEN:
                return self._iterator
        if self._iterator is None:
            self._state = _OPEN
            source = self._source
            if not hasattr(source, "__aiter__"):
                self._busy = True
                try:
                    source = await source
                finally:
                    self._busy = False
                    if self._waiters:
                        self._wake_all()
                if isinstance(source, ResponseStream):
                    self._inner = source
                elif not hasattr(source, "__aiter__"):
                    raise StreamError(
                        f"the stream's awaitable produced {type(source).__name__}, not an async iterable"
                    )
            if isinstance(source, ResponseStream) and source._relays_only():
                # ST-15: read its source directly; it still finalises this one
                source = source._source
            self._iterator = aiter(source)
            self._step = self._iterator.__anext__
        return self._iterator

    def _relays_only(self) -> bool:
        """A stream that adds nothing between its source and its reader (ST-15):
        unstarted, keeps no updates (ST-14), no transform hook, no mapping, and its
        source is iterable as it is."""
        return self._recorder is _ignore and self._plain()

    async def _consume(self, iterating: bool = False) -> AsyncGenerator[TUpdate, None]:
        if self._state not in (_NEW, _OPEN):
            return
        token = object()
        self._consumer = token
        task = asyncio.current_task() if iterating else None
        if task is not None:
            self._iterating = task
        try:
            await self._open()
            # ST-13: closed or failed while this consumer opened or waited for the
            # opening; a source opened after a close is closed here
            if self._state != _OPEN:
                await self._close_source()
                return
            # a stream that keeps no updates records none: no call per update (ST-14)
            record = None if self._recorder is _ignore else self._recorder
            # the list itself: hooks added later still apply
            hooks = self._transform_hooks
            mapper = self._map
            awaited = mapper is not None and inspect.iscoroutinefunction(mapper)
            while True:
                # ST-13: another task is pulling; take turns, never pull twice at once
                if self._busy:
                    await self._wait_while(lambda: self._busy)
                    if self._state != _OPEN:
                        return
                self._consumer = token
                self._busy = True
                try:
                    update = await self._step()
                except StopAsyncIteration:
                    if self._lent is None:
                        break
                    # the source takes the lent stream's final response
                    self._give_back()
                    continue
                except BaseException as exc:
                    if self._lent is None or self._state != _OPEN:
                        raise
                    update = await self._throw_back(exc)
                    if update is _ENDED:
                        break
                finally:
                    self._busy = False
                    if self._waiters:
                        self._wake_all()
                # ST-13: closed by another task while this one pulled
                if self._state != _OPEN:
                    await self._close_source()
                    return
                # the source lends a stream: read it here, in its place
                if type(update) is Handoff:
                    self._borrow(update)
                    continue
                if self._lent is not None:
                    self._lent.record(update)
                    if (
                        self._lent.transform is not None
                        and (update := self._lent.transform(update)) is None
                    ):
                        continue
                if mapper is not None:
                    update = mapper(update) if not awaited else await mapper(update)
                if record is not None:
                    record(update)
                if hooks:
                    for hook in hooks:
                        changed = await _call(hook, update)
                        if changed is not None:
                            update = changed
                yield update
        except GeneratorExit:
            # The consumer left early. Close unless another consumer has taken over
            # since.
            if self._consumer is token and self._state == _OPEN:
                self._state = _CLOSED
                self._wake_all()
                await self._end(None, [self._close_source])
            raise
        except BaseException as exc:
            await self._fail(exc)
            raise
        finally:
            if task is not None and self._iterating is task:
                # ST-13: a task waiting in get_final_response() may go on
                self._iterating = None
                self._wake_all()
        await self._source_ended()

    async def _source_ended(self) -> None:
        """The source is exhausted: clean up, then finalise once (ST-5, ST-9)."""
        if self._state == _OPEN:
            self._state = _DONE
            # claimed now: cleanup first (ST-9)
            self._finalizing = asyncio.get_running_loop().create_future()
            try:
                await self._cleanup(None)
                await self._compute_final()
            finally:
                self._finalizing.set_result(None)

    async def _wait_while(self, condition: Callable[[], bool]) -> None:
        """Wait, woken by `_wake_all`, until ``condition`` no longer holds or the stream
        is no longer open (ST-13); a cancelled waiter leaves no trace."""
        while self._state == _OPEN and condition():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _other_iterating(self) -> bool:
        return self._iterating is not None and not self._iterating.done()

    def _wake_all(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def _fail(self, exc: BaseException) -> None:
        """The source, a transform hook or the consumer's task failed: close and clean
        up."""
        if self._state != _OPEN:
            return
        if isinstance(exc, asyncio.CancelledError):
            # cancelled, not failed: there is no error to report later
            self._state = _CLOSED
        else:
            self._state = _FAILED
            self._error = exc
        self._wake_all()
        await self._end(exc, [self._close_source])

    async def _close_source(self) -> None:
        lent, self._lent = self._lent, None
        closer = getattr(self._iterator, "aclose", None)
        try:
            if closer is not None:
                await closer()  # a source that lent a stream closes it (its `finally`)
        finally:
            if lent is not None and lent.reader is not None:
                await lent.reader.aclose()

    # -- a stream lent by the source (ST-51) -----------------------------------------------------

    def _borrow(self, handoff: Handoff) -> None:
        lent = handoff.stream
        taken = lent._take_over()
        # a stream with hooks of its own: its reader runs them
        reader = None if taken is not None else aiter(lent)
        self._lent = _Lent(
            lent, handoff.transform, taken[1] if taken else _ignore, reader
        )
        self._step = taken[0] if taken else reader.__anext__  # type: ignore[union-attr]

    def _give_back(self) -> None:
        self._lent = None
        self._step = self._iterator.__anext__  # type: ignore[union-attr]

    async def _throw_back(self, exc: BaseException) -> Any:
        """The lent stream failed: it fails, and the error is thrown into the source
        where it lent it (ST-51); the source's next update, or `_ENDED`."""
        lent = cast(_Lent, self._lent)
        self._give_back()
        await lent.stream._fail(exc)
        try:
            return await self._iterator.athrow(exc)  # type: ignore[union-attr]
        except StopAsyncIteration:
            return _ENDED

    async def _end(
        self,
        error: BaseException | None,
        closers: Sequence[Callable[[], Awaitable[None]]],
    ) -> None:
        """Run ``closers`` (the source's close, the inner stream's), then the cleanup
        hooks, each whatever the ones before it did (ST-6).

        A closer that fails is treated like a failing cleanup hook: while ``error``
        propagates it is logged and added as a note to that error; otherwise its
        exception propagates once cleanup has run (a second closer's failure is noted on
        the first's). So a run's cleanup (releasing its session, SE-12) never depends on
        its source closing cleanly.
        """
        raised: BaseException | None = None
        for close in closers:
            try:
                await close()
            except BaseException as exc:  # every closer runs, then cleanup
                if raised is None:
                    raised = exc
                else:
                    raised.add_note(f"closing the stream also failed: {exc!r}")
        if raised is not None and error is not None and isinstance(raised, Exception):
            logger.error(
                "closing the source failed while the stream was failing",
                exc_info=raised,
            )
            error.add_note(f"closing the source also failed: {raised!r}")
            raised = None
        # cleanup notes its own failures on the error it is given (ST-6); with none,
        # they propagate
        await self._cleanup(error if raised is None else raised)
        if raised is not None:
            raise raised

    async def _cleanup(self, error: BaseException | None) -> None:
        if self._cleaned:
            return
        self._cleaned = True
        failures: list[Exception] = []
        for hook in self._cleanup_hooks:
            try:
                await _call(hook)
            except Exception as exc:  # every hook runs; failures are reported below
                failures.append(exc)
        if not failures:
            return
        # keep the original error; record the cleanup failures on it
        if error is not None:
            for failure in failures:
                logger.error(
                    "cleanup hook failed while the stream was failing", exc_info=failure
                )
                error.add_note(f"cleanup hook also failed: {failure!r}")
            return
        if len(failures) == 1:
            raise failures[0]
        raise ExceptionGroup("cleanup hooks failed", failures)

    async def _finalize(self) -> None:
        """Wait for the final response: the task in which the source ended computes it,
        once, and every other caller shares it (ST-5, ST-13)."""
        if self._has_final:
            return
        assert self._finalizing is not None, (
            "internal error: a finished stream always claims its finalisation"
        )
        await asyncio.shield(self._finalizing)
        self._check_shared_final()

    def _check_shared_final(self) -> None:
        if self._error is not None:
            raise self._error
        if not self._has_final:
            raise StreamError(
                "the stream ended without a final response (its cleanup failed)"
            )

    async def _compute_final(self) -> None:
        try:
            inner_final = (
                await self._inner.get_final_response()
                if self._inner is not None
                else None
            )
            if self._finalizer is not None:
                result: Any = await _call(self._finalizer, list(self._updates))
            elif self._inner is not None:
                result = inner_final
            else:
                result = list(self._updates)
            for hook in self._result_hooks:
                changed = await _call(hook, result)
                if changed is not None:
                    result = changed
        except Exception as exc:
            self._error = exc
            raise
        self._final = result
        self._has_final = True
