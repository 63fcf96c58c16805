"""Named sentinel values of the Kafka protocol, so code says ``NO_LEADER_EPOCH`` instead of ``-1``.

Leader epochs (KIP-101, KIP-320, KIP-570):

- ``NO_LEADER_EPOCH`` (-1): no epoch known or given. A request carrying it is not checked against the
  partition's epoch (KIP-320 clients that opt out, old versions); in StopReplica v3 (KIP-570) it means
  the controller sent no epoch; a record batch written without one carries it too.
- ``LEADER_EPOCH_DURING_DELETE`` (-2): StopReplica v3 (KIP-570) sends it for partitions of a topic being
  deleted; it overrides any epoch check.
- ``UNDEFINED_EPOCH`` / ``UNDEFINED_EPOCH_OFFSET`` (-1, -1): OffsetsForLeaderEpoch's answer when the
  leader knows no epoch at or below the one asked for.
"""

from __future__ import annotations

from typing import Final

NO_LEADER_EPOCH: Final = -1
LEADER_EPOCH_DURING_DELETE: Final = -2
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1

# Idempotent / transactional producers (KIP-98, KIP-360)
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1

# ListOffsets timestamps (KIP-79, KIP-734, KIP-1005)
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL_TIMESTAMP: Final = -4
LATEST_TIERED_TIMESTAMP: Final = -5

NO_TIMESTAMP: Final = -1
