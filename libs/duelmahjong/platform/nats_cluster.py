"""A real JetStream cluster on loopback: ``size`` ``nats-server`` processes routed to each other.

For tests and benches of what replication is for (``JETSTREAM_REPLICAS`` > 1): a stream with three
replicas keeps its messages and its quorum when one node dies, and the node catches up when it comes
back. Every node keeps its client, cluster and monitoring ports across a restart, so a client that was
given every URL reconnects to it and its peers find it again::

    with EmbeddedNatsCluster(data_dir, size=3) as cluster:
        cluster.url          # "nats://127.0.0.1:20001,nats://127.0.0.1:20002,nats://127.0.0.1:20003"
        cluster.kill(1)      # SIGKILL node 1
        cluster.start_node(1)
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from duelmahjong.platform.embedded import EmbeddedNats, EmbeddedServerError, free_port
from duelmahjong.platform.nats_permissions import LocalAccess

HOST = "127.0.0.1"


@dataclass
class ClusterNode:
    name: str
    server: EmbeddedNats
    cluster_port: int
    monitor_port: int

    def healthy(self) -> bool:
        """The node's own verdict (``/healthz``): serving, its JetStream current with the cluster's
        meta leader and with every stream and consumer it holds a replica of."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.monitor_port}/healthz", timeout=1) as reply:
                return bool(json.loads(reply.read()).get("status") == "ok")
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def stream_leader(self, stream: str) -> str | None:
        """The name of the node that leads ``stream`` in this node's view (``/jsz``), if it knows one."""
        url = f"http://{HOST}:{self.monitor_port}/jsz?streams=true"
        with urllib.request.urlopen(url, timeout=2) as reply:
            report = json.loads(reply.read())
        for account in report.get("account_details") or []:
            for detail in account.get("stream_detail") or []:
                if detail.get("name") == stream and (detail.get("cluster") or {}).get("leader"):
                    return str(detail["cluster"]["leader"])
        return None


class EmbeddedNatsCluster:
    """``size`` JetStream nodes named ``n0``…, with fixed ports, routed to one another."""

    def __init__(
        self, data_dir: Path, *, size: int = 3, name: str = "duel", access: LocalAccess | None = None
    ) -> None:
        if size < 1:
            raise ValueError("a cluster needs at least one node")
        self.data_dir = data_dir
        self.name = name
        self.access = access  # its identities, and TLS between clients and nodes and among nodes
        cluster_ports = [free_port(HOST) for _ in range(size)]
        routes = [f"nats://{HOST}:{port}" for port in cluster_ports]
        self.nodes: list[ClusterNode] = []
        for index, cluster_port in enumerate(cluster_ports):
            node_name = f"n{index}"
            monitor_port = free_port(HOST)
            args = ("--server_name", node_name, "-m", str(monitor_port))
            config = _cluster_block(name, f"{HOST}:{cluster_port}", routes, access)
            server = EmbeddedNats(
                data_dir / node_name,
                host=HOST,
                port=free_port(HOST),
                extra_args=args,
                access=access,
                config=config,
            )
            self.nodes.append(ClusterNode(node_name, server, cluster_port, monitor_port))

    @property
    def url(self) -> str:
        """Every node's client URL, comma separated (what NATS_URL takes)."""
        scheme = "tls" if self.access is not None else "nats"
        return ",".join(f"{scheme}://{HOST}:{node.server.port}" for node in self.nodes)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        for index in range(len(self.nodes)):
            self.start_node(index, wait=False)
        self.wait_healthy()

    def start_node(self, index: int, *, wait: bool = True, within_seconds: float = 30.0) -> None:
        self.nodes[index].server.start()
        if wait:
            self.wait_healthy(within_seconds=within_seconds)

    def kill(self, index: int) -> None:
        """SIGKILL one node: no shutdown, no leadership hand-over; its peers notice on their own."""
        self.nodes[index].server.kill()

    def running(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.server.pid is not None]

    def wait_healthy(self, *, within_seconds: float = 30.0) -> None:
        """Until every running node reports itself healthy (a meta leader elected, replicas current)."""
        deadline = time.monotonic() + within_seconds
        while not all(node.healthy() for node in self.running()):
            if time.monotonic() > deadline:
                sick = [node.name for node in self.running() if not node.healthy()]
                raise EmbeddedServerError(f"NATS cluster nodes {sick} not healthy within {within_seconds}s")
            time.sleep(0.1)

    def stream_leader(self, stream: str) -> int:
        """The index of the node that leads ``stream`` now, as the running nodes see it."""
        for node in self.running():
            leader = node.stream_leader(stream)
            if leader is not None:
                return next(i for i, n in enumerate(self.nodes) if n.name == leader)
        raise EmbeddedServerError(f"no running node knows a leader of stream {stream}")

    def stop(self) -> None:
        for node in self.nodes:
            node.server.stop()


def _cluster_block(name: str, listen: str, routes: list[str], access: LocalAccess | None) -> tuple[str, ...]:
    """A node's ``cluster`` configuration: its routes to every node; with ``access``, over TLS that
    both ends verify (a node proves itself with the certificate the local CA issued the servers)."""
    lines = ["cluster {", f"  name: {json.dumps(name)}", f"  listen: {json.dumps(listen)}"]
    lines.append(f"  routes: {json.dumps(routes)}")
    if access is not None and access.access.tls is not None:
        tls = access.access.tls
        lines += [
            "  tls {",
            f"    cert_file: {json.dumps(str(tls.cert))}",
            f"    key_file: {json.dumps(str(tls.key))}",
            f"    ca_file: {json.dumps(str(tls.ca))}",
            "    verify: true",
            "    timeout: 2",
            "  }",
        ]
    lines.append("}")
    return tuple(lines)
