"""Grafana dashboard JSON from a small data model (Dashboard, Row, Panel) and PromQL helpers.

Used by deploy/grafana/dashboards.py, which holds the dashboards themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


def per_minute(labels: str, selector: str) -> str:
    """Events a minute (a counter's rate, times 60), summed by `labels` ("" for one total)."""
    by = f" by ({labels})" if labels else ""
    return f"60 * sum{by} (rate({selector}[{RATE}]))"


def p99(labels: str, bucket_selector: str, quantile: float = 0.99) -> str:
    return f"histogram_quantile({quantile}, sum by ({labels}, le) (rate({bucket_selector}[{RATE}])))"


def rpc(service: str, method: str) -> str:
    """The `method` label value of one RPC (its full gRPC path)."""
    return f"/duelmahjong.v1.{service}/{method}"


PLAY = rpc("TableService", "Play")
ENQUEUE = rpc("MatchmakingService", "Enqueue")
PLAY_STREAMS = f'duel_table_grpc_requests_in_flight_count{{method="{PLAY}"}}'


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    unit: str = "short"
    kind: str = "timeseries"  # timeseries | stat | heatmap (of a histogram's buckets by le)
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
    elif panel.kind == "heatmap":
        # The buckets are already counts per `le`: Grafana must not bucket them again.
        for target in targets:
            target["format"] = "heatmap"
        options.update({"calculate": False, "yAxis": {"unit": panel.unit}, "cellGap": 1})
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
