"""What a service declares on JetStream: its streams, its durable consumers, and how the deployment
stores them (replicas, retentions). :class:`~duelmahjong.platform.bus.Bus` applies these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nats.js import api


@dataclass(frozen=True)
class StreamSpec:
    """A stream: its name, the subjects it captures, how long publishes are de-duplicated and how long
    messages are kept (0 = until deleted)."""

    name: str
    subjects: tuple[str, ...]
    duplicate_window_seconds: float = 120.0
    max_age_seconds: float = 0.0
    allow_direct: bool = False  # answer direct gets (any replica), for readers that need no consumer

    def config(self, policy: StoragePolicy) -> api.StreamConfig:
        max_age = policy.max_age_seconds.get(self.name, self.max_age_seconds)
        return api.StreamConfig(
            name=self.name,
            subjects=list(self.subjects),
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            duplicate_window=self.duplicate_window_seconds,
            max_age=max_age or None,
            num_replicas=policy.replicas,
            allow_direct=self.allow_direct or None,
        )


@dataclass(frozen=True)
class StoragePolicy:
    """How a deployment stores its streams: ``replicas`` copies of every stream and durable consumer
    (1 on a single server; 3 on a three-node cluster, so the loss of one node loses nothing and
    JetStream keeps a quorum), and per-stream retentions that override the declared ones."""

    replicas: int = 1
    max_age_seconds: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsumerSpec:
    """A durable pull consumer: shared by every replica that binds the same ``durable`` name."""

    stream: str
    durable: str
    filter_subject: str
    ack_wait_seconds: float = 30.0
    max_deliver: int = 10
    nak_delay_seconds: float = 1.0

    def config(self, policy: StoragePolicy) -> api.ConsumerConfig:
        return api.ConsumerConfig(
            durable_name=self.durable,
            name=self.durable,
            filter_subject=self.filter_subject,
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.ALL,
            ack_wait=self.ack_wait_seconds,
            max_deliver=self.max_deliver,
            num_replicas=policy.replicas,
        )
