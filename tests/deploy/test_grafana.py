"""deploy/grafana: the dashboards are what deploy/grafana/dashboards.py renders, provisioned from
where compose mounts them, on the provisioned datasource; every query parses (promtool)."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import yaml


def test_dashboard_files_are_what_the_generator_renders(kit: ModuleType, monitoring: ModuleType) -> None:
    generator = monitoring.load_dashboard_generator()
    expected = generator.rendered_files()
    folder = kit.DEPLOY / "grafana" / "dashboards"
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.json")}
    assert set(on_disk) == set(expected), "run `python deploy/grafana/dashboards.py`"
    for name, text in expected.items():
        assert on_disk[name] == text, f"{name} is stale: run `python deploy/grafana/dashboards.py`"


def test_dashboards_use_the_provisioned_datasource_and_unique_uids(
    kit: ModuleType, monitoring: ModuleType
) -> None:
    provisioning = kit.DEPLOY / "grafana" / "provisioning"
    datasources = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())
    (datasource,) = datasources["datasources"]
    uids = []
    for name, dashboard in monitoring.dashboards().items():
        uids.append(dashboard["uid"])
        for panel in monitoring.panels(dashboard):
            if panel["type"] == "row":
                continue
            assert panel["datasource"]["uid"] == datasource["uid"], f"{name}: {panel['title']}"
            assert panel["targets"], f"{name}: {panel['title']} has no query"
    assert len(uids) == len(set(uids))


def test_dashboards_are_provisioned_from_where_compose_mounts_them(kit: ModuleType) -> None:
    provider_file = kit.DEPLOY / "grafana" / "provisioning" / "dashboards" / "duel-mahjong.yml"
    (provider,) = yaml.safe_load(provider_file.read_text())["providers"]
    compose = (kit.DEPLOY / "compose" / "docker-compose.yml").read_text()
    assert f"../grafana/dashboards:{provider['options']['path']}:ro" in compose


def test_every_query_parses_as_promql(kit: ModuleType, monitoring: ModuleType, tmp_path: Path) -> None:
    rules = []
    for name, dashboard in monitoring.dashboards().items():
        for i, expr in enumerate(monitoring.dashboard_exprs(dashboard)):
            record = "dashboard:" + re.sub(r"\W", "_", name) + f":{i}"
            rules.append({"record": record, "expr": monitoring.grafana_to_promql(expr)})
    assert rules
    check = tmp_path / "dashboard-queries.yml"
    check.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    kit.run_tool([kit.find_tool("promtool"), "check", "rules", str(check)])


def test_every_dashboard_is_explained_in_the_readme(kit: ModuleType, monitoring: ModuleType) -> None:
    readme = (kit.DEPLOY / "README.md").read_text()
    for dashboard in monitoring.dashboards().values():
        assert dashboard["title"] in readme, f"{dashboard['title']} is not explained in deploy/README.md"


def test_panels_have_unique_ids_and_do_not_overlap(monitoring: ModuleType) -> None:
    for name, dashboard in monitoring.dashboards().items():
        placed = list(monitoring.panels(dashboard))
        assert len({p["id"] for p in placed}) == len(placed), f"{name}: duplicate panel ids"
        cells: dict[tuple[int, int], str] = {}
        for panel in placed:
            grid = panel["gridPos"]
            assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, f"{name}: {panel['title']} overflows"
            for x in range(grid["x"], grid["x"] + grid["w"]):
                for y in range(grid["y"], grid["y"] + grid["h"]):
                    assert (x, y) not in cells, f"{name}: {panel['title']} overlaps {cells[x, y]}"
                    cells[x, y] = panel["title"]
