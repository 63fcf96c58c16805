"""A valid request for every API an Apache Kafka broker serves on its client listener, at any version
(tests/test_apache_kafka_conformance.py).

``request_for(api_name, version, ctx)`` builds the request body from :data:`BUILDERS` (a field dict per
API, snake_case attributes, nested structs as dicts) or, for an API without a builder, the request with
every field at its default (a valid request for those: an empty list of items, no filter). Builders set
every field any version has; :func:`make` keeps those the version defines. Requests name things that
exist (``ctx.topic``, its id and partitions, the node's log directory) or names of their own
(``ctx.unique("group")``) so that no request waits on another's group or transaction.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcodec.protocol.codec import message_class, message_info
from kcodec.protocol.model import Message
from kcodec.protocol.schema import MessageInfo
from kcodec.protocol.values import Uuid
from kcodec.records import NewRecord, build_batch

__all__ = ["BUILDERS", "Ctx", "make", "request_for"]

# Kafka's enums as the requests use them (org.apache.kafka.common.resource/acl)
TOPIC, GROUP = 2, 3  # ResourceType
ANY_TYPE = 1  # ResourceType.ANY, PatternType.ANY, AclOperation.ANY, AclPermissionType.ANY
LITERAL = 3  # PatternType
READ, ALLOW = 3, 3  # AclOperation, AclPermissionType


@dataclass
class Ctx:
    """What the requests refer to: an existing topic (name, id, partition count) and the node."""

    topic: str
    topic_id: Uuid
    partitions: int
    broker_id: int
    cluster_id: str
    log_dir: str
    prefix: str = "kcodec-conformance"
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def unique(self, what: str) -> str:
        return f"{self.prefix}-{what}-{next(self._ids)}"


def _records(version: int) -> bytes:
    # Produce v0-v1 carry magic 0 message sets, v2 magic 1, v3+ magic 2 batches
    magic = 0 if version < 2 else 1 if version == 2 else 2
    return build_batch([NewRecord(b"value", key=b"key", timestamp=1_700_000_000_000)], magic=magic)


def _topic_partition0(c: Ctx, name_attr: str = "name", **partition: Any) -> dict[str, Any]:
    return {name_attr: c.topic, "partitions": [{"partition_index": 0, **partition}]}


Builder = Callable[[int, Ctx], dict[str, Any]]


def _produce(v: int, c: Ctx) -> dict[str, Any]:
    partition = {"index": 0, "records": _records(v)}
    return {
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": c.topic, "topic_id": c.topic_id, "partition_data": [partition]}],
    }


def _fetch(v: int, c: Ctx) -> dict[str, Any]:
    partition = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": 0,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    topic = {"topic": c.topic, "topic_id": c.topic_id, "partitions": [partition]}
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 22,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [topic],
        "rack_id": "",
    }


def _list_offsets(v: int, c: Ctx) -> dict[str, Any]:
    partition = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1, "max_num_offsets": 1}
    return {"replica_id": -1, "isolation_level": 0, "topics": [{"name": c.topic, "partitions": [partition]}]}


def _offset_commit(v: int, c: Ctx) -> dict[str, Any]:
    partition = {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1}
    topic = {"name": c.topic, "topic_id": c.topic_id, "partitions": [{**partition, "committed_metadata": ""}]}
    # a simple (standalone) commit: no generation, no member
    return {
        "group_id": c.unique("group"),
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "retention_time_ms": -1,
        "topics": [topic],
    }


def _offset_fetch(v: int, c: Ctx) -> dict[str, Any]:
    group = c.unique("group")
    topics = [{"name": c.topic, "partition_indexes": [0]}]
    by_id = [{"name": c.topic, "topic_id": c.topic_id, "partition_indexes": [0]}]
    return {"group_id": group, "topics": topics, "groups": [{"group_id": group, "topics": by_id}]}


def _join_group(v: int, c: Ctx) -> dict[str, Any]:
    return {
        "group_id": c.unique("group"),
        "session_timeout_ms": 30000,
        "rebalance_timeout_ms": 30000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }


def _acl_filter(v: int, c: Ctx) -> dict[str, Any]:
    return {
        "resource_type_filter": ANY_TYPE,
        "resource_name_filter": None,
        "pattern_type_filter": ANY_TYPE if v >= 1 else LITERAL,
        "principal_filter": None,
        "host_filter": None,
        "operation": ANY_TYPE,
        "permission_type": ANY_TYPE,
    }


def _create_acls(v: int, c: Ctx) -> dict[str, Any]:
    creation = {
        "resource_type": TOPIC,
        "resource_name": c.topic,
        "resource_pattern_type": LITERAL,
        "principal": "User:alice",
        "host": "*",
        "operation": READ,
        "permission_type": ALLOW,
    }
    return {"creations": [creation]}


def _share_state(v: int, c: Ctx, group: str | None = None, **partition: Any) -> dict[str, Any]:
    # The share-group state APIs (share coordinator) read and write the state of a share partition that
    # InitializeShareGroupState created: they share one group, which InitializeShareGroupState (the
    # lowest api key of them) initializes first. Kafka answers INVALID_REQUEST for an uninitialized one.
    topic = {"topic_id": c.topic_id, "partitions": [{"partition": 0, **partition}]}
    return {"group_id": group or f"{c.prefix}-share-state", "topics": [topic]}


def _consumer_group_heartbeat(v: int, c: Ctx) -> dict[str, Any]:
    return {
        "group_id": c.unique("group"),
        "member_id": _member(),
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": [c.topic],
        "topic_partitions": [],
    }


def _member() -> str:
    return str(Uuid(uuid.uuid4().bytes))  # KIP-848 and later: the member chooses its id


def _share_fetch(v: int, c: Ctx) -> dict[str, Any]:
    partition = {"partition_index": 0, "partition_max_bytes": 1 << 20, "acknowledgement_batches": []}
    return {
        "group_id": c.unique("share"),
        "member_id": _member(),
        "share_session_epoch": 0,  # opens a share session
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 500,
        "batch_size": 500,
        "topics": [{"topic_id": c.topic_id, "partitions": [partition]}],
        "forgotten_topics_data": [],
    }


def _share_acknowledge(v: int, c: Ctx) -> dict[str, Any]:
    batch = {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}  # 1: accept
    partition = {"partition_index": 0, "acknowledgement_batches": [batch]}
    return {
        "group_id": c.unique("share"),
        "member_id": _member(),
        "share_session_epoch": 1,  # a session that does not exist: answered SHARE_SESSION_NOT_FOUND
        "topics": [{"topic_id": c.topic_id, "partitions": [partition]}],
    }


def _streams_group_heartbeat(v: int, c: Ctx) -> dict[str, Any]:
    subtopology = {
        "subtopology_id": "0",
        "source_topics": [c.topic],
        "source_topic_regex": [],
        "state_changelog_topics": [],
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
    }
    return {  # a member joining (epoch 0) with its topology, as Kafka Streams' first heartbeat
        "group_id": c.unique("streams"),
        "member_id": _member(),
        "member_epoch": 0,
        "endpoint_information_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "topology": {"epoch": 0, "subtopologies": [subtopology]},
        "active_tasks": [],
        "standby_tasks": [],
        "warmup_tasks": [],
        "process_id": _member(),
        "client_tags": [],
        "task_offsets": [],
        "task_end_offsets": [],
    }


CONFIG = {"name": "retention.ms", "value": "604800000"}

BUILDERS: dict[str, Builder] = {
    "Produce": _produce,
    "Fetch": _fetch,
    "ListOffsets": _list_offsets,
    "Metadata": lambda v, c: {"topics": [{"name": c.topic}], "allow_auto_topic_creation": False},
    "OffsetCommit": _offset_commit,
    "OffsetFetch": _offset_fetch,
    "FindCoordinator": lambda v, c: {"key": (g := c.unique("group")), "key_type": 0, "coordinator_keys": [g]},
    "JoinGroup": _join_group,
    "Heartbeat": lambda v, c: {"group_id": c.unique("group"), "generation_id": 0, "member_id": "m"},
    "LeaveGroup": lambda v, c: {
        "group_id": c.unique("group"),
        "member_id": "m",
        "members": [{"member_id": "m"}],
    },
    "SyncGroup": lambda v, c: {
        "group_id": c.unique("group"),
        "generation_id": 0,
        "member_id": "m",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
    },
    "DescribeGroups": lambda v, c: {"groups": [c.unique("group")], "include_authorized_operations": True},
    "SaslHandshake": lambda v, c: {"mechanism": "PLAIN"},
    "ApiVersions": lambda v, c: {"client_software_name": "kcodec", "client_software_version": "1.0"},
    "CreateTopics": lambda v, c: {
        "topics": [{"name": c.unique("topic"), "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 30000,
    },
    "DeleteTopics": lambda v, c: {
        "topic_names": [(t := c.unique("absent-topic"))],
        "topics": [{"name": t}],
        "timeout_ms": 30000,
    },
    "DeleteRecords": lambda v, c: {"topics": [_topic_partition0(c, offset=0)], "timeout_ms": 30000},
    "InitProducerId": lambda v, c: {"transactional_id": None, "transaction_timeout_ms": 60000},
    "OffsetForLeaderEpoch": lambda v, c: {
        "replica_id": -1,
        "topics": [
            {
                "topic": c.topic,
                "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
            }
        ],
    },
    "AddPartitionsToTxn": lambda v, c: {
        "v3_and_below_transactional_id": (t := c.unique("txn")),
        "v3_and_below_producer_id": 0,
        "v3_and_below_producer_epoch": 0,
        "v3_and_below_topics": [{"name": c.topic, "partitions": [0]}],
        "transactions": [
            {
                "transactional_id": t,
                "producer_id": 0,
                "producer_epoch": 0,
                "verify_only": True,
                "topics": [{"name": c.topic, "partitions": [0]}],
            }
        ],
    },
    "AddOffsetsToTxn": lambda v, c: {
        "transactional_id": c.unique("txn"),
        "producer_id": 0,
        "producer_epoch": 0,
        "group_id": c.unique("group"),
    },
    "EndTxn": lambda v, c: {"transactional_id": c.unique("txn"), "producer_id": 0, "producer_epoch": 0},
    "TxnOffsetCommit": lambda v, c: {
        "transactional_id": c.unique("txn"),
        "group_id": c.unique("group"),
        "producer_id": 0,
        "producer_epoch": 0,
        "generation_id": -1,
        "member_id": "",
        "topics": [_topic_partition0(c, committed_offset=0, committed_leader_epoch=-1)],
    },
    "DescribeAcls": _acl_filter,
    "CreateAcls": _create_acls,
    "DeleteAcls": lambda v, c: {"filters": [_acl_filter(v, c)]},
    "DescribeConfigs": lambda v, c: {
        "resources": [{"resource_type": TOPIC, "resource_name": c.topic, "configuration_keys": None}],
        "include_synonyms": True,
        "include_documentation": True,
    },
    "AlterConfigs": lambda v, c: {
        "resources": [{"resource_type": TOPIC, "resource_name": c.topic, "configs": [CONFIG]}],
        "validate_only": True,
    },
    "AlterReplicaLogDirs": lambda v, c: {
        "dirs": [{"path": c.log_dir, "topics": [{"name": c.topic, "partitions": [0]}]}]
    },
    "DescribeLogDirs": lambda v, c: {"topics": [{"topic": c.topic, "partitions": [0]}]},
    "SaslAuthenticate": lambda v, c: {"auth_bytes": b"\0alice\0secret"},
    "CreatePartitions": lambda v, c: {
        "topics": [{"name": c.topic, "count": c.partitions + 1, "assignments": None}],
        "timeout_ms": 30000,
        "validate_only": True,
    },
    "CreateDelegationToken": lambda v, c: {"renewers": [], "max_lifetime_ms": -1},
    "RenewDelegationToken": lambda v, c: {"hmac": b"not-a-token", "renew_period_ms": -1},
    "ExpireDelegationToken": lambda v, c: {"hmac": b"not-a-token", "expiry_time_period_ms": -1},
    "DescribeDelegationToken": lambda v, c: {"owners": None},
    "DeleteGroups": lambda v, c: {"groups_names": [c.unique("group")]},
    "ElectLeaders": lambda v, c: {
        "election_type": 0,
        "topic_partitions": [{"topic": c.topic, "partitions": [0]}],
        "timeout_ms": 30000,
    },
    "IncrementalAlterConfigs": lambda v, c: {
        "resources": [
            {"resource_type": TOPIC, "resource_name": c.topic, "configs": [{**CONFIG, "config_operation": 0}]}
        ],
        "validate_only": True,
    },
    "AlterPartitionReassignments": lambda v, c: {
        "timeout_ms": 30000,
        "topics": [{"name": c.topic, "partitions": [{"partition_index": 0, "replicas": None}]}],
    },
    "ListPartitionReassignments": lambda v, c: {"timeout_ms": 30000, "topics": None},
    "OffsetDelete": lambda v, c: {"group_id": c.unique("group"), "topics": [_topic_partition0(c)]},
    "DescribeClientQuotas": lambda v, c: {
        "components": [{"entity_type": "client-id", "match_type": 2, "match": None}],
        "strict": False,
    },
    "AlterClientQuotas": lambda v, c: {
        "entries": [
            {
                "entity": [{"entity_type": "client-id", "entity_name": "kcodec"}],
                "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
            }
        ],
        "validate_only": True,
    },
    "DescribeUserScramCredentials": lambda v, c: {"users": None},
    "AlterUserScramCredentials": lambda v, c: {"deletions": [{"name": "alice", "mechanism": 1}]},
    "DescribeQuorum": lambda v, c: {
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    },
    "UpdateFeatures": lambda v, c: {"timeout_ms": 30000, "feature_updates": [], "validate_only": True},
    "DescribeCluster": lambda v, c: {"include_cluster_authorized_operations": True, "endpoint_type": 1},
    "DescribeProducers": lambda v, c: {"topics": [{"name": c.topic, "partition_indexes": [0]}]},
    "UnregisterBroker": lambda v, c: {"broker_id": 999},
    "DescribeTransactions": lambda v, c: {"transactional_ids": [c.unique("txn")]},
    "ListTransactions": lambda v, c: {"duration_filter": -1},
    "ConsumerGroupHeartbeat": _consumer_group_heartbeat,
    "ConsumerGroupDescribe": lambda v, c: {
        "group_ids": [c.unique("group")],
        "include_authorized_operations": True,
    },
    "DescribeTopicPartitions": lambda v, c: {"topics": [{"name": c.topic}], "response_partition_limit": 2000},
    "InitializeShareGroupState": lambda v, c: _share_state(v, c, state_epoch=0, start_offset=0),
    "ReadShareGroupState": lambda v, c: _share_state(v, c, leader_epoch=0),
    "WriteShareGroupState": lambda v, c: _share_state(
        v, c, state_epoch=0, leader_epoch=0, start_offset=0, state_batches=[]
    ),
    "DeleteShareGroupState": lambda v, c: _share_state(v, c, c.unique("share")),
    "ReadShareGroupStateSummary": lambda v, c: _share_state(v, c, leader_epoch=0),
    "ShareGroupHeartbeat": lambda v, c: {
        "group_id": c.unique("share"),
        "member_id": _member(),
        "member_epoch": 0,
        "subscribed_topic_names": [c.topic],
    },
    "ShareGroupDescribe": lambda v, c: {
        "group_ids": [c.unique("share")],
        "include_authorized_operations": True,
    },
    "ShareFetch": _share_fetch,
    "ShareAcknowledge": _share_acknowledge,
    "StreamsGroupHeartbeat": _streams_group_heartbeat,
    "StreamsGroupTopologyDescriptionUpdate": lambda v, c: {
        "group_id": c.unique("streams"),
        "member_id": _member(),
        "topology_epoch": 0,
    },
    "StreamsGroupDescribe": lambda v, c: {
        "group_ids": [c.unique("streams")],
        "include_authorized_operations": True,
    },
}


def _struct(info: MessageInfo, struct: str, data: Mapping[str, Any], version: int) -> Any:
    fields = {f.attr: f for fs in info.structs[struct].by_set.values() for f in fs}
    present = {f.attr for f in info.fields_at(struct, version)}
    values = {}
    for attr, value in data.items():
        f = fields[attr]  # a KeyError here is a misspelt builder
        if attr not in present:
            continue  # not in this version: left at its default
        element = f.element_type
        if element in info.structs and value is not None:
            if f.is_array:
                value = [_struct(info, element, v, version) for v in value]
            else:
                value = _struct(info, element, value, version)
        values[attr] = value
    return info.structs[struct].cls(**values)


def make(message_name: str, version: int, data: Mapping[str, Any]) -> Message:
    """The message ``message_name`` at ``version`` with the fields of ``data`` that ``version`` has
    (snake_case attributes, nested structs as dicts)."""
    message: Message = _struct(message_info(message_name), message_name, data, version)
    return message


def request_for(api_name: str, request_name: str, version: int, ctx: Ctx) -> Message:
    builder = BUILDERS.get(api_name)
    if builder is None:
        default: Message = message_class(request_name)()
        return default
    return make(request_name, version, builder(version, ctx))
