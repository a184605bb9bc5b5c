#!/usr/bin/env python3
"""The Grafana dashboards of deploy/grafana/dashboards/, written as data and rendered to JSON.

    python deploy/grafana/dashboards.py      # rewrite the JSON files after editing this file

tests/deploy checks that the JSON files are what this renders, that every query parses (promtool)
and that every metric a query reads is exported by some service's /metrics. Metric names follow
`duel_<service>_<what>_<unit>`; the platform gives each service the same gRPC and NATS metrics under
its own prefix, so queries over all services select them with a `__name__` regex (`every()`), and
Prometheus adds the `service` and `pod` labels at scrape time (deploy/prometheus/*.yml).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "duel-prometheus"}
SERVICES = ("matchmaking", "table", "scoring", "wallet")
RATE = "$__rate_interval"
# Status codes that mean the server failed, not that the client asked for something refused.
SERVER_ERROR_CODES = "INTERNAL|UNKNOWN|UNAVAILABLE|DATA_LOSS|DEADLINE_EXCEEDED"
HEIGHT = 8


def every(what: str, matchers: str = "", services: tuple[str, ...] = SERVICES) -> str:
    """A selector of the platform metric `duel_<service>_<what>` across `services`."""
    extra = f", {matchers}" if matchers else ""
    return f'{{__name__=~"duel_({"|".join(services)})_{what}"{extra}}}'


def rate_by(labels: str, selector: str) -> str:
    return f"sum by ({labels}) (rate({selector}[{RATE}]))"


def p99(labels: str, bucket_selector: str) -> str:
    return f"histogram_quantile(0.99, sum by ({labels}, le) (rate({bucket_selector}[{RATE}])))"


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    unit: str = "short"
    kind: str = "timeseries"  # timeseries | stat
    description: str = ""
    width: int = 12


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    rows: tuple[Row, ...]
    tags: tuple[str, ...] = field(default=("duel-mahjong",))


def _panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    targets = [
        {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
        for i, (expr, legend) in enumerate(panel.queries)
    ]
    options: dict[str, Any] = {"tooltip": {"mode": "multi", "sort": "desc"}}
    if panel.kind == "timeseries":
        options["legend"] = {"displayMode": "list", "placement": "bottom", "showLegend": True}
    else:
        options["reduceOptions"] = {"calcs": ["lastNotNull"], "fields": "", "values": False}
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": HEIGHT, "w": panel.width, "x": x, "y": y},
        "targets": targets,
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "options": options,
    }


def render(dashboard: Dashboard) -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    y = 0
    for row in dashboard.rows:
        panels.append(
            {
                "id": len(panels) + 1,
                "type": "row",
                "title": row.title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
                "panels": [],
            }
        )
        y += 1
        x = 0
        for panel in row.panels:
            if x + panel.width > 24:
                x, y = 0, y + HEIGHT
            panels.append(_panel_json(panel, len(panels) + 1, x, y))
            x += panel.width
        y += HEIGHT
    return {
        "uid": dashboard.uid,
        "title": dashboard.title,
        "description": dashboard.description,
        "tags": list(dashboard.tags),
        "timezone": "utc",
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": []},
        "annotations": {"list": []},
        "panels": panels,
    }


INFRASTRUCTURE = Dashboard(
    uid="duel-infrastructure",
    title="Duel Mahjong / Infrastructure",
    description="gRPC traffic, codes and latency per RPC; NATS connections and JetStream traffic.",
    rows=(
        Row(
            "gRPC",
            (
                Panel(
                    "Requests/s by service and status code",
                    ((rate_by("service, code", every("grpc_requests_total")), "{{service}} {{code}}"),),
                    unit="reqps",
                ),
                Panel(
                    "Requests/s by RPC",
                    ((rate_by("service, method", every("grpc_requests_total")), "{{method}}"),),
                    unit="reqps",
                ),
                Panel(
                    "Server-error ratio by RPC",
                    (
                        (
                            rate_by(
                                "service, method",
                                every("grpc_requests_total", f'code=~"{SERVER_ERROR_CODES}"'),
                            )
                            + " / "
                            + rate_by("service, method", every("grpc_requests_total")),
                            "{{method}}",
                        ),
                    ),
                    unit="percentunit",
                    description=f"Share of calls ending {SERVER_ERROR_CODES.replace('|', ', ')}.",
                ),
                Panel(
                    "p99 RPC duration (streams: to the end of the stream)",
                    ((p99("service, method", every("grpc_request_duration_seconds_bucket")), "{{method}}"),),
                    unit="s",
                ),
                Panel(
                    "RPCs in flight",
                    (
                        (
                            f"sum by (service) ({every('grpc_requests_in_flight_count')})",
                            "{{service}}",
                        ),
                    ),
                ),
                Panel(
                    "Targets up",
                    (('sum by (service) (up{job="duel"})', "{{service}}"),),
                    kind="stat",
                    description="Scraped processes answering /metrics, per service.",
                ),
            ),
        ),
        Row(
            "NATS and JetStream",
            (
                Panel(
                    "Connected to NATS",
                    ((f"min by (service, pod) ({every('nats_connected_bool')})", "{{pod}}"),),
                    kind="stat",
                    description="1 while the process holds its NATS connection.",
                ),
                Panel(
                    "NATS reconnects (1h)",
                    ((f"sum by (service) (increase({every('nats_reconnects_total')}[1h]))", "{{service}}"),),
                ),
                Panel(
                    "JetStream publishes/s by outcome",
                    ((rate_by("service, outcome", every("bus_published_total")), "{{service}} {{outcome}}"),),
                    unit="ops",
                ),
                Panel(
                    "Consumed messages/s by consumer and outcome",
                    (
                        (
                            rate_by("service, durable, outcome", every("bus_messages_handled_total")),
                            "{{durable}} {{outcome}}",
                        ),
                    ),
                    unit="ops",
                ),
            ),
        ),
    ),
)

ECONOMY = Dashboard(
    uid="duel-economy",
    title="Duel Mahjong / Economy",
    description="The wallet applying prestige-moving events (hand settlements, fees, escapes, items,"
    " guesses, table closes): throughput, outcomes, rejections and how long each takes.",
    rows=(
        Row(
            "Settlements in the wallet",
            (
                Panel(
                    "Events applied/s by kind",
                    (
                        (
                            rate_by("kind", 'duel_wallet_events_handled_total{outcome="applied"}'),
                            "{{kind}}",
                        ),
                    ),
                    unit="ops",
                    description="Each is one ledger transaction (exactly once per event id).",
                ),
                Panel(
                    "Duplicates, rejections and undecodable events/s",
                    (
                        (
                            rate_by(
                                "kind, outcome",
                                'duel_wallet_events_handled_total{outcome=~"duplicate|rejected|undecodable"}',
                            ),
                            "{{kind}} {{outcome}}",
                        ),
                    ),
                    unit="ops",
                    description="Duplicates are redeliveries, harmless; rejections and undecodable events"
                    " are prestige that did not move.",
                ),
                Panel(
                    "p99 settlement duration by kind (decode, ledger transaction, publish)",
                    ((p99("kind", "duel_wallet_settlement_duration_seconds_bucket"), "{{kind}}"),),
                    unit="s",
                ),
                Panel(
                    "Wallet RPCs/s (logins, holds, balances)",
                    ((rate_by("method", every("grpc_requests_total", services=("wallet",))), "{{method}}"),),
                    unit="reqps",
                ),
            ),
        ),
    ),
)

DASHBOARDS = {"economy.json": ECONOMY, "infrastructure.json": INFRASTRUCTURE}


def rendered_files() -> dict[str, str]:
    """file name -> the exact JSON text this module writes."""
    return {
        name: json.dumps(render(board), indent=2, ensure_ascii=False) + "\n"
        for name, board in DASHBOARDS.items()
    }


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("dashboards")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered_files().items():
        (out / name).write_text(text, encoding="utf-8")
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
