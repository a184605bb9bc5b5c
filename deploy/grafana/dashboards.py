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
from pathlib import Path

# A standalone tool next to its model (not an installed package): import it from this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grafana_json import (
    PLAY_STREAMS,
    SERVER_ERROR_CODES,
    Dashboard,
    Panel,
    Row,
    every,
    p99,
    per_minute,
    rate_by,
    render,
    rpc,
)

# The services with a Postgres pool (the others export no db_pool_* metrics).
DATABASE_SERVICES = ("wallet",)


def pool(what: str) -> str:
    return every(f"db_pool_{what}_connections", services=DATABASE_SERVICES)


INFRASTRUCTURE = Dashboard(
    uid="duel-infrastructure",
    title="Duel Mahjong / Infrastructure",
    description="gRPC traffic, codes and latency per RPC; NATS connections and JetStream traffic;"
    " the Postgres connection pools.",
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
                Panel(
                    "Consumer backlog: pending and unacked messages per durable",
                    (
                        (
                            f"max by (durable) ({every('bus_consumer_pending_messages')})",
                            "pending {{durable}}",
                        ),
                        (
                            f"max by (durable) ({every('bus_consumer_ack_pending_messages')})",
                            "unacked {{durable}}",
                        ),
                    ),
                    description="JetStream's own counters, polled every 15 s by each process that declared"
                    " the consumer (max over replicas). DuelConsumerLagHigh pages above 1000 for 10 minutes.",
                ),
            ),
        ),
        Row(
            "Postgres pool",
            (
                Panel(
                    "Connections in use / open / max per pod",
                    (
                        (
                            f"sum by (service, pod) ({pool('in_use')})",
                            "in use {{pod}}",
                        ),
                        (
                            f"sum by (service, pod) ({pool('open')})",
                            "open {{pod}}",
                        ),
                        (
                            f"max by (service) ({pool('max')})",
                            "max {{service}}",
                        ),
                    ),
                    description="asyncpg does not report callers waiting for a connection: in use at"
                    " max means they wait.",
                ),
            ),
        ),
    ),
)

ECONOMY = Dashboard(
    uid="duel-economy",
    title="Duel Mahjong / Economy",
    description="Scoring (hands verified by replay and scored, refusals) and the wallet applying"
    " prestige-moving events (settlements, fees, escapes, items, guesses, table closes): amounts moved,"
    " settlement lag.",
    rows=(
        Row(
            "Scoring",
            (
                Panel(
                    "Hands scored /min by profile and outcome",
                    (
                        (
                            per_minute("profile, outcome", "duel_scoring_hands_scored_total"),
                            "{{profile}} {{outcome}}",
                        ),
                    ),
                ),
                Panel(
                    "Hand results refused (replay mismatch) and undecodable /min",
                    (
                        (per_minute("", "duel_scoring_replay_rejected_total"), "replay rejected"),
                        (per_minute("", "duel_scoring_malformed_events_total"), "malformed"),
                    ),
                    description="Each refused result moved no prestige; DuelReplayRejected pages.",
                ),
                Panel(
                    "p50 / p99 scoring time (HandEnded → scored, replay included)",
                    (
                        (p99("service", "duel_scoring_hand_scoring_seconds_bucket", 0.5), "p50"),
                        (p99("service", "duel_scoring_hand_scoring_seconds_bucket"), "p99"),
                    ),
                    unit="s",
                ),
            ),
        ),
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
                    "Settlement lag p50 / p99 (hand end → applied)",
                    (
                        (
                            p99("kind", 'duel_wallet_settlement_lag_seconds_bucket{kind="hand-scored"}', 0.5),
                            "p50",
                        ),
                        (p99("kind", 'duel_wallet_settlement_lag_seconds_bucket{kind="hand-scored"}'), "p99"),
                    ),
                    unit="s",
                    description="From the HandEnded event's time to the wallet's SettlementApplied stored:"
                    " scoring's replay and both backlogs included. DuelSettlementLagHigh pages over 10 s.",
                ),
                Panel(
                    "Prestige moved /min by purpose",
                    ((per_minute("purpose", "duel_wallet_prestige_moved_total"), "{{purpose}}"),),
                    description="Amounts credited by applied events (hand settlements, escapes, fees,"
                    " 换牌 charges, guesses); a redelivery moves and counts nothing.",
                ),
                Panel(
                    "Fees collected /min (hand fees, 换牌 charges)",
                    (
                        (
                            per_minute(
                                "purpose", 'duel_wallet_prestige_moved_total{purpose=~"fee|exchange"}'
                            ),
                            "{{purpose}}",
                        ),
                    ),
                ),
                Panel(
                    "Wallet RPCs/s (logins, holds, balances)",
                    ((rate_by("method", every("grpc_requests_total", services=("wallet",))), "{{method}}"),),
                    unit="reqps",
                ),
            ),
        ),
        Row(
            "Ledger audit",
            (
                Panel(
                    "Ledger invariants hold",
                    (("min(duel_wallet_ledger_invariant_ok_bool)", "ok"),),
                    kind="stat",
                    width=6,
                    description="1 while the wallet's periodic audit (WALLET_AUDIT_INTERVAL_SECONDS) finds"
                    " every invariant of docs/wallet.md; DuelLedgerInvariantViolated pages on 0.",
                ),
                Panel(
                    "Invariants violated",
                    (("max(duel_wallet_ledger_violations_count)", "violations"),),
                    kind="stat",
                    width=6,
                ),
                Panel(
                    "Ledger balance by holder",
                    (("max by (holder) (duel_wallet_ledger_balance_prestige)", "{{holder}}"),),
                    width=6,
                    description="players: prestige in circulation; fees, guess: the house's income;"
                    " grants: the mint (negative: what it issued). They sum to 0.",
                ),
                Panel(
                    "Audit duration",
                    (("max by (pod) (duel_wallet_ledger_audit_duration_seconds)", "{{pod}}"),),
                    unit="s",
                    width=6,
                    description="The audit scans every ledger entry: it grows with the ledger.",
                ),
            ),
        ),
    ),
)


OVERVIEW = Dashboard(
    uid="duel-overview",
    title="Duel Mahjong / Overview",
    description="Players at tables and in queues, matches started and hands settled, queue wait.",
    rows=(
        Row(
            "Players",
            (
                Panel(
                    "Live tables",
                    (("sum(duel_table_live_tables_count)", "tables"),),
                    kind="stat",
                    width=8,
                ),
                Panel(
                    "Players at tables (open Play streams)",
                    ((f"sum({PLAY_STREAMS})", "players"),),
                    kind="stat",
                    width=8,
                    description="One Play stream per connected seat: two per live table with both"
                    " players in.",
                ),
                Panel(
                    "Players in queues (unpaired)",
                    (("sum(max by (room) (duel_matchmaking_queue_waiting_players))", "queued"),),
                    kind="stat",
                    width=8,
                    description="Matchmaking's own count of queued players not yet paired, all rooms"
                    " (every replica mirrors the whole store: the max per room, not the sum).",
                ),
                Panel(
                    "Live tables per table pod",
                    (("sum by (pod) (duel_table_live_tables_count)", "{{pod}}"),),
                    width=24,
                ),
            ),
        ),
        Row(
            "Matches",
            (
                Panel(
                    "Matches started /min by room (tables opened)",
                    ((per_minute("room", "duel_matchmaking_table_opened_total"), "{{room}}"),),
                    description="Pairings whose table a table server opened (matchmaking's count).",
                ),
                Panel(
                    "Pairings made, expired tickets, declined multipliers /min",
                    (
                        (per_minute("", "duel_matchmaking_paired_total"), "paired"),
                        (per_minute("", "duel_matchmaking_expired_total"), "expired unpaired"),
                        (per_minute("", "duel_matchmaking_declined_total"), "declined (T7)"),
                        (per_minute("", "duel_matchmaking_hold_refused_total"), "hold refused"),
                    ),
                ),
                Panel(
                    "Hands settled and tables closed /min",
                    (
                        (
                            per_minute(
                                "kind",
                                "duel_wallet_events_handled_total"
                                '{kind=~"hand-scored|closed", outcome="applied"}',
                            ),
                            "{{kind}}",
                        ),
                    ),
                    description="hand-scored: a hand's settlement applied; closed: a table closed"
                    " (match finished, holds released).",
                ),
                Panel(
                    "Queue wait (Enqueue → paired), p50 and p99 by room",
                    (
                        (p99("room", "duel_matchmaking_queue_wait_seconds_bucket", 0.5), "p50 {{room}}"),
                        (p99("room", "duel_matchmaking_queue_wait_seconds_bucket"), "p99 {{room}}"),
                    ),
                    unit="s",
                    description="Human players only (a bot's wait is the fill delay).",
                ),
                Panel(
                    "Pairings waiting for a table server",
                    (("max(duel_matchmaking_awaiting_table_pairings)", "waiting"),),
                    description="Agreed pairings no table server had room for yet: scale the table servers"
                    " (every replica sees them all: the max, not the sum).",
                ),
                Panel(
                    "Matchmaking replicas: rooms owned, store current",
                    (
                        ("sum by (pod) (duel_matchmaking_rooms_owned)", "rooms {{pod}}"),
                        ("sum by (pod) (duel_matchmaking_store_current)", "current {{pod}}"),
                    ),
                    description="Each room has one owner (it pairs the queue and acts on its deadlines);"
                    " a replica whose view of the store is not current acts on nothing"
                    ' (docs/operations.md "When a matchmaking replica dies").',
                ),
                Panel(
                    "Matchmaking deadlines overdue, stranded holds",
                    (
                        ("max(duel_matchmaking_deadlines_overdue)", "deadlines overdue"),
                        ("max(duel_matchmaking_stranded_holds)", "stranded holds"),
                    ),
                    description="Both 0 in a healthy fleet: a deadline no replica acts on, a hold no"
                    " replica releases (both alert).",
                ),
                Panel(
                    "Holds released by matchmaking and compare-and-set conflicts /min",
                    (
                        (per_minute("how", "duel_matchmaking_holds_released_total"), "released {{how}}"),
                        (per_minute("what", "duel_matchmaking_cas_conflicts_total"), "conflicts {{what}}"),
                    ),
                    description="Releases: ended before a table, refused, expired, lapsed (a replica died"
                    " on the way). Conflicts: writes another replica won (normal at a low rate).",
                ),
                Panel(
                    "Guest logins/min",
                    (
                        (
                            per_minute(
                                "",
                                "duel_wallet_grpc_requests_total"
                                f'{{method="{rpc("WalletService", "GuestLogin")}", code="OK"}}',
                            ),
                            "logins",
                        ),
                    ),
                ),
            ),
        ),
    ),
)

TABLE_SERVERS = Dashboard(
    uid="duel-table-servers",
    title="Duel Mahjong / Table servers",
    description="Per table pod: live tables, actions and their latency, timeouts, auto-play, reconnects,"
    " escapes, full queues, hands; failover (adoptions, orphans, fencing, lease renewals);"
    " connected seats, table RPCs, write-ahead appends to JetStream.",
    rows=(
        Row(
            "Play",
            (
                Panel(
                    "Live tables per pod",
                    (("sum by (pod) (duel_table_live_tables_count)", "{{pod}}"),),
                    description="What the HPA scales on (duel_table_live_tables, target 70% of capacity).",
                ),
                Panel(
                    "Actions/s by kind and origin",
                    ((rate_by("kind, origin", "duel_table_actions_total"), "{{kind}} {{origin}}"),),
                    unit="ops",
                    description="origin: the seat's player, the server's default at a timeout, or the bot"
                    " for a disconnected seat.",
                ),
                Panel(
                    "Action latency (received → written ahead and sent)",
                    (
                        (
                            "sum by (le) (rate(duel_table_action_latency_seconds_bucket[$__rate_interval]))",
                            "{{le}}",
                        ),
                    ),
                    unit="s",
                    kind="heatmap",
                ),
                Panel(
                    "Action latency p50 / p99 per pod",
                    (
                        (p99("pod", "duel_table_action_latency_seconds_bucket", 0.5), "p50 {{pod}}"),
                        (p99("pod", "duel_table_action_latency_seconds_bucket"), "p99 {{pod}}"),
                    ),
                    unit="s",
                ),
                Panel(
                    "Collector pauses p99, and the freeze period, per pod",
                    (
                        (p99("pod", "duel_table_gc_pause_seconds_bucket"), "pause p99 {{pod}}"),
                        ("max by (pod) (duel_table_gc_freeze_period_seconds)", "period {{pod}}"),
                    ),
                    unit="s",
                    description="A collection stops every table of its pod. The period between freezes"
                    " shortens as actions grow, to keep each collection near GC_PAUSE_TARGET_SECONDS"
                    ' (docs/operations.md, "The table server\'s garbage collector").',
                ),
                Panel(
                    "Timeouts, auto-play, reconnects, escapes /min",
                    (
                        (per_minute("", "duel_table_timeouts_total"), "timeouts (T11 default played)"),
                        (per_minute("", "duel_table_autoplays_total"), "auto-play (seat disconnected)"),
                        (per_minute("", "duel_table_reconnects_total"), "reconnects"),
                        (per_minute("", "duel_table_escapes_total"), "escapes (T10)"),
                    ),
                ),
                Panel(
                    "Hands finished by outcome, and actions refused BUSY (full queue) /min",
                    (
                        (per_minute("outcome", "duel_table_hands_total"), "{{outcome}}"),
                        (per_minute("", "duel_table_queue_full_total"), "queue full"),
                    ),
                ),
            ),
        ),
        Row(
            'Failover (docs/operations.md, "When a table server dies")',
            (
                Panel(
                    "Tables adopted /min by how, and adoptions that failed",
                    (
                        (per_minute("how", "duel_table_tables_adopted_total"), "{{how}}"),
                        (per_minute("", "duel_table_adoption_failures_total"), "taken but not served"),
                    ),
                    description="orphan: its server's lease died (crash, OOM kill, node lost, paused);"
                    " handed_over: a draining server handed it here. Failures are tried again.",
                ),
                Panel(
                    "Adoption latency p50 / p99 (owner's last renewal seen → served again)",
                    (
                        (
                            "histogram_quantile(0.5, sum by (le)"
                            " (rate(duel_table_adoption_latency_seconds_bucket[$__rate_interval])))",
                            "p50",
                        ),
                        (
                            "histogram_quantile(0.99, sum by (le)"
                            " (rate(duel_table_adoption_latency_seconds_bucket[$__rate_interval])))",
                            "p99",
                        ),
                    ),
                    unit="s",
                    description="At least TABLE_LEASE_SECONDS (5 s) for an orphan: its lease must expire"
                    " first. Alert DuelTableAdoptionSlow above 15 s.",
                ),
                Panel(
                    "Orphan tables (no live owner), as each pod sees them",
                    (("max by (pod) (duel_table_orphan_tables_count)", "{{pod}}"),),
                    description="Every server watches every owner, so all pods show the same number"
                    " while it lasts. Alert DuelTablesUnowned when above 0 for a minute.",
                ),
                Panel(
                    "Fencing refusals and lease renew failures /min per pod",
                    (
                        (per_minute("pod", "duel_table_fencing_refusals_total"), "fenced {{pod}}"),
                        (
                            per_minute("pod", "duel_table_lease_renew_failures_total"),
                            "lease not renewed {{pod}}",
                        ),
                    ),
                    description="Fenced: a server kept writing a table another server had taken (it"
                    " lets go). Renew failures: the pod could not reach the owners bucket; its tables"
                    " move once it fails for TABLE_LEASE_SECONDS.",
                ),
            ),
        ),
        Row(
            "Load",
            (
                Panel(
                    "Open Play streams per pod",
                    ((f"sum by (pod) ({PLAY_STREAMS})", "{{pod}}"),),
                    description="One per connected seat: two per live table with both players in.",
                ),
                Panel(
                    "Table RPCs/s by method and code",
                    (
                        (
                            rate_by("method, code", every("grpc_requests_total", services=("table",))),
                            "{{method}} {{code}}",
                        ),
                    ),
                    unit="reqps",
                ),
            ),
        ),
        Row(
            "Events",
            (
                Panel(
                    "JetStream publishes/s per pod (write-ahead events, hand results)",
                    (
                        (
                            rate_by("pod, outcome", every("bus_published_total", services=("table",))),
                            "{{pod}} {{outcome}}",
                        ),
                    ),
                    unit="ops",
                    description="Every engine event is appended to its table's subject before any seat"
                    " sees it: this is the table servers' event rate.",
                ),
                Panel(
                    "Messages consumed/s by consumer and outcome",
                    (
                        (
                            rate_by(
                                "durable, outcome", every("bus_messages_handled_total", services=("table",))
                            ),
                            "{{durable}} {{outcome}}",
                        ),
                    ),
                    unit="ops",
                ),
                Panel(
                    "p99 OpenTable duration",
                    (
                        (
                            p99(
                                "pod",
                                "duel_table_grpc_request_duration_seconds_bucket"
                                f'{{method="{rpc("TableService", "OpenTable")}"}}',
                            ),
                            "{{pod}}",
                        ),
                    ),
                    unit="s",
                ),
            ),
        ),
    ),
)

DASHBOARDS = {
    "overview.json": OVERVIEW,
    "table-servers.json": TABLE_SERVERS,
    "economy.json": ECONOMY,
    "infrastructure.json": INFRASTRUCTURE,
}


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
