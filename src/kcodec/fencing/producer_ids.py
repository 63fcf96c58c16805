"""KIP-98/KIP-360: the transaction coordinator's answer to InitProducerId.

A producer without a ``transactional.id`` always gets a fresh producer id at epoch 0. With one, the
coordinator keeps a :class:`TransactionalIdState` per transactional id and, given the (producer id,
epoch) the request carries (KIP-360: ``NO_PRODUCER_ID``/``NO_PRODUCER_EPOCH`` for a producer that
starts, its current ones for a producer that recovers), decides among: a new producer, an epoch bump,
the retry of a bump whose answer was lost, fencing of a zombie, a new id for an id that expired, and a
new id when the epoch is exhausted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kcodec.protocol.error_codes import ErrorCode
from kcodec.protocol.sentinels import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

#: The largest producer epoch (int16); an epoch at MAX_PRODUCER_EPOCH - 1 or above cannot be bumped.
MAX_PRODUCER_EPOCH = 32767
#: InitProducerId v4+ answers a fenced producer with PRODUCER_FENCED (KIP-588); older versions with
#: INVALID_PRODUCER_EPOCH.
PRODUCER_FENCED_SINCE = 4


class InitOutcome(StrEnum):
    NEW_PRODUCER = "new_producer"  # a fresh id at epoch 0 (no transactional id, or a new one)
    BUMP = "bump"  # same id, epoch + 1 (fences older instances)
    RETRY_OF_BUMP = "retry_of_bump"  # the request repeats the pre-bump epoch: the current one again
    NEW_ID_EXPIRED = "new_id_expired"  # the coordinator no longer knew the id: a fresh one at epoch 0
    NEW_ID_EXHAUSTED = "new_id_exhausted"  # the epoch cannot grow: a fresh id at epoch 0
    FENCED = "fenced"  # a zombie: neither the current nor the previous (id, epoch)
    #: the current epoch is exhausted and the producer named another one: Kafka's
    #: prepareIncrementProducerEpoch throws IllegalStateException, the request fails with
    #: UNKNOWN_SERVER_ERROR (e.g. the retry of the bump that reached the exhausted epoch)
    EPOCH_EXHAUSTED = "epoch_exhausted"
    INVALID_REQUEST = "invalid_request"  # only one of producer id and epoch given


@dataclass(frozen=True, slots=True)
class TransactionalIdState:
    """The coordinator's state for one transactional id: current id and epoch, and the previous ones
    (kept after a bump so that a retry of that bump can be recognised)."""

    producer_id: int
    producer_epoch: int
    last_producer_id: int = NO_PRODUCER_ID
    #: Set by a bump the producer itself asked for (KIP-360), reset to NO_PRODUCER_EPOCH by a new instance.
    last_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class InitProducerIdDecision:
    outcome: InitOutcome
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    state: TransactionalIdState | None = None  # the coordinator's state afterwards (None: unchanged)


def is_epoch_exhausted(epoch: int) -> bool:
    """KIP-360: an epoch this close to the int16 maximum cannot be bumped (the bump must stay below it)."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


def _fenced(api_version: int) -> ErrorCode:
    if api_version >= PRODUCER_FENCED_SINCE:
        return ErrorCode.PRODUCER_FENCED
    return ErrorCode.INVALID_PRODUCER_EPOCH


def init_producer_id(
    transactional_id: str | None,
    producer_id: int,
    producer_epoch: int,
    state: TransactionalIdState | None,
    new_producer_id: int,
    *,
    api_version: int = PRODUCER_FENCED_SINCE,
) -> InitProducerIdDecision:
    """Decide an InitProducerId request (KIP-98, KIP-360).

    ``producer_id``/``producer_epoch`` are the request's (``NO_PRODUCER_ID``/``NO_PRODUCER_EPOCH`` when
    absent), ``state`` the coordinator's state for ``transactional_id`` (None: unknown or expired) and
    ``new_producer_id`` the id the coordinator would hand out if it needs a fresh one. Pure: the caller
    stores ``decision.state``.
    """
    given = (producer_id != NO_PRODUCER_ID, producer_epoch != NO_PRODUCER_EPOCH)
    if given[0] != given[1]:
        return InitProducerIdDecision(InitOutcome.INVALID_REQUEST, ErrorCode.INVALID_REQUEST)
    if transactional_id is None:
        return InitProducerIdDecision(InitOutcome.NEW_PRODUCER, ErrorCode.NONE, new_producer_id, 0)
    expected = given[0]
    if state is None:
        fresh = TransactionalIdState(new_producer_id, 0)
        outcome = InitOutcome.NEW_ID_EXPIRED if expected else InitOutcome.NEW_PRODUCER
        return InitProducerIdDecision(outcome, ErrorCode.NONE, new_producer_id, 0, fresh)
    if expected and not _valid_producer_id(producer_id, producer_epoch, state):
        return InitProducerIdDecision(InitOutcome.FENCED, _fenced(api_version))
    if is_epoch_exhausted(state.producer_epoch) and (not expected or producer_epoch == state.producer_epoch):
        # TransactionMetadata.prepareProducerIdRotation: the exhausted epoch is kept as the last one only
        # when the producer named it (a retry of the rotation is then recognised); a new instance
        # (no id given) leaves none, so the instance it replaces cannot take the new id.
        last_epoch = state.producer_epoch if expected else NO_PRODUCER_EPOCH
        rotated = TransactionalIdState(new_producer_id, 0, state.producer_id, last_epoch)
        outcome = InitOutcome.NEW_ID_EXHAUSTED
        return InitProducerIdDecision(outcome, ErrorCode.NONE, new_producer_id, 0, rotated)
    if is_epoch_exhausted(state.producer_epoch):
        return InitProducerIdDecision(InitOutcome.EPOCH_EXHAUSTED, ErrorCode.UNKNOWN_SERVER_ERROR)
    return _bump(state, producer_epoch if expected else None, api_version)


def _valid_producer_id(producer_id: int, producer_epoch: int, state: TransactionalIdState) -> bool:
    """KIP-360: a recovering producer may name the current id, or the previous one when its epoch was
    exhausted (the retry of a rotation it never saw the answer to)."""
    return (
        state.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == state.producer_id
        or (producer_id == state.last_producer_id and is_epoch_exhausted(producer_epoch))
    )


def _bump(
    state: TransactionalIdState, expected_epoch: int | None, api_version: int
) -> InitProducerIdDecision:
    """TransactionMetadata.prepareIncrementProducerEpoch: a new instance (no epoch given) bumps the epoch
    and resets the last epoch to none, so that no earlier instance can pass for a retry; a producer that
    recovers with the current epoch bumps it and keeps that epoch as the last one."""
    pid, epoch = state.producer_id, state.producer_epoch
    if expected_epoch is None:
        bumped = TransactionalIdState(pid, epoch + 1, pid, NO_PRODUCER_EPOCH)
        return InitProducerIdDecision(InitOutcome.BUMP, ErrorCode.NONE, pid, epoch + 1, bumped)
    if epoch == NO_PRODUCER_EPOCH or expected_epoch == epoch:
        bumped = TransactionalIdState(pid, epoch + 1, pid, epoch)
        return InitProducerIdDecision(InitOutcome.BUMP, ErrorCode.NONE, pid, epoch + 1, bumped)
    if expected_epoch == state.last_producer_epoch:
        return InitProducerIdDecision(InitOutcome.RETRY_OF_BUMP, ErrorCode.NONE, pid, epoch, state)
    return InitProducerIdDecision(InitOutcome.FENCED, _fenced(api_version))
