"""The platform's pure parts: config, tokens, error statuses, logs, event subjects, the stack file."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from duelmahjong.platform import auth, errors, subjects, validation
from duelmahjong.platform.config import ConfigError, ServiceConfig, setting
from duelmahjong.platform.logging import configure_logging, get_logger, log_context
from duelmahjong.platform.service import storage_policy
from duelmahjong.platform.stack import DEFAULT_MATCHMAKING_REPLICAS, Stack, StackError
from duelmahjong.platform.stackfile import (
    ServiceEndpoint,
    StackState,
    client_tls,
    grpc_target,
    service_addresses,
)
from duelmahjong.platform.streams import ConsumerSpec, StoragePolicy
from duelmahjong.platform.tasks import cancel_and_wait
from duelmahjong.platform.tls import ClientTls, TlsError, list_server_name
from duelmahjong.v1 import events_pb2

SECRET = "k" * 40
BASE_ENV = {
    "TOKEN_SECRET": SECRET,
    "NATS_URL": "nats://127.0.0.1:1",
    "TLS_CERT_FILE": "server.pem",
    "TLS_KEY_FILE": "server-key.pem",
}


@dataclass(frozen=True, kw_only=True)
class TableLikeConfig(ServiceConfig):
    service_name: str = setting("tablelike", help="name")
    capacity: int = setting(10, help="tables at most")
    draining: bool = setting(False, help="refuse new tables")
    rooms: tuple[str, ...] = setting((), help="rooms served")

    def validate(self) -> list[str]:
        problems = super().validate()
        if self.capacity < 1:
            problems.append("CAPACITY must be at least 1")
        return problems


def test_config_reads_typed_values_from_the_environment() -> None:
    config = TableLikeConfig.from_env({**BASE_ENV, "CAPACITY": "7", "DRAINING": "yes", "ROOMS": "a, b"})
    assert (config.capacity, config.draining, config.rooms) == (7, True, ("a", "b"))
    assert config.service_name == "tablelike"


def test_config_lists_every_problem_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        TableLikeConfig.from_env({"CAPACITY": "many", "DRAINING": "perhaps"})
    text = str(err.value)
    assert "CAPACITY='many' is not an integer" in text
    assert "DRAINING='perhaps' is not a boolean" in text
    assert "TOKEN_SECRET is required" in text


def test_config_validation_fails_fast_with_a_readable_message() -> None:
    with pytest.raises(ConfigError) as err:
        TableLikeConfig.from_env({**BASE_ENV, "CAPACITY": "0", "GRPC_PORT": "70000", "TOKEN_SECRET": "short"})
    assert err.value.problems == [
        "GRPC_PORT=70000 is outside 0..65535",
        "TOKEN_SECRET must be at least 32 bytes long",
        "CAPACITY must be at least 1",
    ]


def test_config_bounds_name_each_setting_by_its_variable_and_value() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Bounded(ServiceConfig):
        workers: int = setting(1, env="X_WORKERS", help="workers")
        wait_seconds: float = setting(1.0, help="wait")

        def validate(self) -> list[str]:
            return super().validate() + self.at_least_one("workers") + self.positive("wait_seconds")

    assert Bounded.from_env(BASE_ENV).workers == 1
    with pytest.raises(ConfigError) as err:
        Bounded.from_env({**BASE_ENV, "X_WORKERS": "0", "WAIT_SECONDS": "0"})
    assert err.value.problems == ["X_WORKERS=0 must be at least 1", "WAIT_SECONDS=0.0 must be positive"]


def test_config_is_frozen_and_keeps_the_secret_out_of_its_repr() -> None:
    config = ServiceConfig.from_env(BASE_ENV)
    assert SECRET not in repr(config)
    with pytest.raises(AttributeError):
        config.grpc_port = 1  # type: ignore[misc]


def test_a_service_that_needs_nats_refuses_to_start_without_it() -> None:
    with pytest.raises(ConfigError, match="NATS_URL is required"):
        ServiceConfig.from_env({"TOKEN_SECRET": SECRET})


def test_streams_and_consumers_take_the_deployments_replicas_and_the_table_logs_retention() -> None:
    config = ServiceConfig.from_env({**BASE_ENV, "JETSTREAM_REPLICAS": "3", "TABLE_LOG_RETENTION_DAYS": "7"})
    policy = storage_policy(config)
    table_log = subjects.TABLE_LOG_STREAM.config(policy)
    assert (table_log.num_replicas, table_log.max_age) == (3, 7 * 86400)
    wallet = subjects.WALLET_STREAM.config(policy)
    assert (wallet.num_replicas, wallet.max_age) == (3, None)  # kept until deleted
    consumer = ConsumerSpec("DUEL_TABLE", "scoring-hand-ended", subjects.HAND_ENDED).config(policy)
    assert consumer.num_replicas == 3
    default = subjects.TABLE_LOG_STREAM.config(StoragePolicy())
    assert (default.num_replicas, default.max_age) == (1, 30 * 86400)


@pytest.mark.parametrize(("variable", "value"), [("JETSTREAM_REPLICAS", "0"), ("JETSTREAM_REPLICAS", "6"),
                                                 ("TABLE_LOG_RETENTION_DAYS", "0")])  # fmt: skip
def test_replicas_and_retention_out_of_range_are_refused_by_name(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        ServiceConfig.from_env({**BASE_ENV, variable: value})


def test_settings_table_documents_every_variable() -> None:
    names = [row[0] for row in ServiceConfig.settings_table()]
    assert names[:3] == ["SERVICE_NAME", "GRPC_HOST", "GRPC_PORT"]
    assert "TOKEN_SECRET" in names


T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_token_round_trips_its_principal() -> None:
    token = auth.issue_token(SECRET, player_id="p-9", role=auth.Role.ADMIN, session_id="s-1", now=T0)
    principal = auth.verify_token(SECRET, token, now=T0 + timedelta(hours=1))
    expected = auth.Principal("p-9", auth.Role.ADMIN, "s-1", T0 + auth.DEFAULT_TTL, auth.key_id(SECRET))
    assert principal == expected
    assert jwt.get_unverified_header(token)["kid"] == auth.key_id(SECRET)


KID = {"kid": auth.key_id(SECRET)}


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda t: auth.issue_token("z" * 40, player_id="p", now=T0), "does not accept"),
        (
            lambda t: jwt.encode(jwt.decode(t, options={"verify_signature": False}), "z" * 40, headers=KID),
            "signature",
        ),
        (lambda t: jwt.encode(jwt.decode(t, options={"verify_signature": False}), SECRET), "no signing key"),
        (lambda t: t[:-3] + ("AAA" if not t.endswith("AAA") else "BBB"), "signature"),
        (lambda t: "garbage", "malformed: it is not a token this service issued"),
        (lambda t: "t7e3t7e3." + t.split(".", 1)[1], "malformed"),  # a header that is no UTF-8 text
        (lambda t: t.split(".")[0] + ".t7e3." + t.split(".")[2], "signature"),
        (lambda t: jwt.encode({"sub": "p"}, SECRET, algorithm="HS256", headers=KID), "lacks a claim"),
        (
            lambda t: jwt.encode({"sub": "p", "iss": "x"}, SECRET, algorithm="HS256", headers=KID),
            "lacks a claim",
        ),
        (
            lambda t: jwt.encode(
                {"iss": "x", "sub": "p", "role": "player", "sid": "s", "exp": 9e9}, SECRET, headers=KID
            ),
            "another",
        ),
        (
            lambda t: jwt.encode(
                {"iss": auth.ISSUER, "sub": "p", "role": "god", "sid": "s", "exp": 9e9}, SECRET, headers=KID
            ),
            "role",
        ),
    ],
)
def test_forged_or_garbled_tokens_are_refused_in_our_words(mangle: object, reason: str) -> None:
    token = auth.issue_token(SECRET, player_id="p", now=T0)
    with pytest.raises(auth.InvalidToken, match=reason) as refused:
        auth.verify_token(SECRET, mangle(token), now=T0)  # type: ignore[operator]
    said = str(refused.value)
    assert said.startswith("the session token") and not any(w in said for w in ("codec", "Invalid", "byte"))


NEXT = "n" * 40


def test_a_rotation_accepts_the_signing_key_and_the_accepted_one_and_no_other() -> None:
    old = auth.issue_token(SECRET, player_id="p-1", now=T0)
    staged = auth.TokenKeys(SECRET, accepted=NEXT)  # before the switch: sign old, accept the next
    switched = auth.TokenKeys(NEXT, accepted=SECRET)  # after it: sign next, accept the previous
    new = auth.issue_token(switched, player_id="p-2", now=T0)
    assert jwt.get_unverified_header(new)["kid"] == auth.key_id(NEXT) == switched.signing_id
    assert jwt.get_unverified_header(auth.issue_token(staged, player_id="p", now=T0))["kid"] == auth.key_id(
        SECRET
    )
    for keys in (staged, switched):
        assert auth.verify_token(keys, old, now=T0).key_id == auth.key_id(SECRET)
        assert auth.verify_token(keys, new, now=T0).player_id == "p-2"
    with pytest.raises(auth.InvalidToken, match=f"does not accept \\(key id {auth.key_id(SECRET)}: retired"):
        auth.verify_token(NEXT, old, now=T0)  # the previous key dropped
    with pytest.raises(auth.InvalidToken, match="does not accept"):
        auth.verify_token(SECRET, new, now=T0)  # a service never told of the next key


def test_a_made_up_key_id_is_refused_and_not_repeated_back() -> None:
    forged = jwt.encode({"sub": "p"}, SECRET, headers={"kid": "<script>" * 4})
    with pytest.raises(auth.InvalidToken, match="an unknown key id") as refused:
        auth.verify_token(SECRET, forged, now=T0)
    assert "<script>" not in str(refused.value)


def test_the_accepted_key_is_checked_like_the_signing_key() -> None:
    assert ServiceConfig.from_env({**BASE_ENV, "TOKEN_SECRET_ACCEPTED": NEXT}).token_keys() == auth.TokenKeys(
        SECRET, NEXT
    )
    assert ServiceConfig.from_env(BASE_ENV).token_keys().secrets() == (SECRET,)
    with pytest.raises(ConfigError) as short:
        ServiceConfig.from_env({**BASE_ENV, "TOKEN_SECRET_ACCEPTED": "short"})
    assert "TOKEN_SECRET_ACCEPTED must be at least 32 bytes long" in str(short.value)
    with pytest.raises(ConfigError, match="TOKEN_SECRET_ACCEPTED equals TOKEN_SECRET"):
        ServiceConfig.from_env({**BASE_ENV, "TOKEN_SECRET_ACCEPTED": SECRET})
    assert SECRET not in repr(ServiceConfig.from_env({**BASE_ENV, "TOKEN_SECRET_ACCEPTED": NEXT}))
    assert SECRET not in repr(auth.TokenKeys(SECRET, NEXT)) and NEXT not in repr(auth.TokenKeys(SECRET, NEXT))
    assert NEXT not in repr(ServiceConfig.from_env({**BASE_ENV, "TOKEN_SECRET_ACCEPTED": NEXT}))


def test_token_metadata_must_be_a_bearer_token() -> None:
    assert auth.token_from_metadata(auth.bearer_metadata("abc")) == "abc"
    with pytest.raises(auth.InvalidToken, match="Bearer"):
        auth.token_from_metadata((("authorization", "Basic abc"),))
    with pytest.raises(auth.InvalidToken, match="needs a session token"):
        auth.token_from_metadata(())


def test_require_role_denies_other_roles() -> None:
    player = auth.Principal("p-1", auth.Role.PLAYER, "s", T0)
    token = auth.bind_principal(player)
    try:
        assert auth.require_role(auth.Role.PLAYER) == player
        with pytest.raises(errors.PermissionDenied, match="needs role admin"):
            auth.require_role(auth.Role.ADMIN)
    finally:
        auth.reset_principal(token)
    with pytest.raises(errors.Unauthenticated):
        auth.current_principal()


def test_every_domain_error_names_a_real_grpc_status_and_never_unknown() -> None:
    classes = [errors.DomainError, *_subclasses(errors.DomainError)]
    for cls in classes:
        code = grpc.StatusCode[cls.status]
        assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.OK, grpc.StatusCode.INTERNAL), cls


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_log_lines_are_json_with_ids_and_the_exception() -> None:
    out = io.StringIO()
    configure_logging("wallet", "INFO", stream=out)
    try:
        with log_context(request_id="r-1", table_id="t-2"):
            try:
                raise ValueError("boom")
            except ValueError:
                get_logger("core").exception("settle failed", extra={"fields": {"hand_id": "h-3"}})
        get_logger("core").info("after")
    finally:
        logging.getLogger("duel").handlers.clear()
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert (first["request_id"], first["table_id"], first["hand_id"]) == ("r-1", "t-2", "h-3")
    assert "ValueError: boom" in first["exc"]
    assert "request_id" not in second  # the context ended with the block


def test_every_event_of_the_contract_has_a_subject() -> None:
    events = {
        name
        for name, message in events_pb2.DESCRIPTOR.message_types_by_name.items()
        if "envelope" in message.fields_by_name
    }
    # The table's write-ahead log goes to a per-table subject (table_log_subject), not a fixed one.
    assert set(subjects.SUBJECT_OF_EVENT) == events - {"TableEventAppended"}
    streams = [subjects.TABLE_STREAM, subjects.SCORING_STREAM, subjects.WALLET_STREAM]
    for subject in subjects.SUBJECT_OF_EVENT.values():
        assert any(subject.startswith(s.subjects[0][:-1]) for s in streams), subject
    with pytest.raises(ValueError):
        subjects.table_log_subject("t.1")


def test_a_service_serves_tls_unless_plaintext_is_asked_for_and_not_both() -> None:
    without_tls = {"TOKEN_SECRET": SECRET, "NATS_URL": "nats://127.0.0.1:1"}
    with pytest.raises(ConfigError, match="TLS_CERT_FILE and TLS_KEY_FILE are required"):
        ServiceConfig.from_env(without_tls)
    with pytest.raises(ConfigError, match="TLS_CERT_FILE and TLS_KEY_FILE are required"):
        ServiceConfig.from_env({**without_tls, "TLS_CERT_FILE": "server.pem"})
    with pytest.raises(ConfigError, match="choose one"):
        ServiceConfig.from_env({**BASE_ENV, "GRPC_PLAINTEXT": "true"})
    plaintext = ServiceConfig.from_env({**without_tls, "GRPC_PLAINTEXT": "true"})
    assert plaintext.client_tls() == ClientTls(plaintext=True)
    config = ServiceConfig.from_env({**BASE_ENV, "TLS_CA_FILE": "ca.pem"})
    assert config.client_tls() == ClientTls(ca_file=Path("ca.pem"))
    assert ServiceConfig.from_env(BASE_ENV).client_tls() == ClientTls()  # the system trust store


def test_clients_find_the_ca_from_the_flag_then_the_environment_then_the_state_file(tmp_path: Path) -> None:
    state_file = tmp_path / "stack.json"
    StackState(services={}, ca_file="/stack/ca.pem").write(state_file)
    assert client_tls(state_file, environ={}) == ClientTls(ca_file=Path("/stack/ca.pem"))
    assert client_tls(state_file, environ={"TLS_CA_FILE": "/env/ca.pem"}).ca_file == Path("/env/ca.pem")
    chosen = client_tls(state_file, ca_file=Path("/flag/ca.pem"), environ={"TLS_CA_FILE": "/env/ca.pem"})
    assert chosen.ca_file == Path("/flag/ca.pem")
    assert client_tls(tmp_path / "none.json", environ={}) == ClientTls()  # no stack: the system's CAs
    assert client_tls(state_file, environ={"GRPC_PLAINTEXT": "true"}).plaintext
    StackState(services={}, plaintext=True).write(state_file)
    assert client_tls(state_file, environ={}).plaintext


def test_a_replica_list_is_verified_against_its_one_host_and_several_hosts_need_a_name() -> None:
    assert list_server_name("ipv4:10.0.0.1:1,10.0.0.1:2") == "10.0.0.1"
    assert list_server_name("dns:///matchmaking:50051") == ""
    with pytest.raises(TlsError, match="no one host name"):
        list_server_name("ipv4:10.0.0.1:1,10.0.0.2:1")
    with pytest.raises(TlsError, match="no one host name"):
        ClientTls().channel("ipv4:10.0.0.1:1,10.0.0.2:1")
    assert ClientTls(plaintext=True).describe() == "plaintext (GRPC_PLAINTEXT=true)"


def test_service_addresses_prefer_flags_then_environment_then_the_state_file(tmp_path: Path) -> None:
    state_file = tmp_path / "stack.json"
    StackState(
        services={
            "wallet": ServiceEndpoint("127.0.0.1:1", "m"),
            "table": ServiceEndpoint("127.0.0.1:3", "m"),
        }
    ).write(state_file)
    addresses = service_addresses(
        state_file, overrides={"wallet": "w:9"}, environ={"TABLE_ADDRESS": "t:9", "WALLET_ADDRESS": "x:1"}
    )
    assert addresses == {"wallet": "w:9", "matchmaking": None, "table": "t:9", "scoring": None}
    assert service_addresses(tmp_path / "none.json", environ={})["wallet"] is None


def test_clients_are_given_one_target_that_lists_every_matchmaking_replica(
    tmp_path: Path,
) -> None:
    replicas = ["127.0.0.1:2", "127.0.0.1:4"]
    state = StackState(
        services={
            "matchmaking": ServiceEndpoint(replicas[0], "m"),
            "matchmaking-2": ServiceEndpoint(replicas[1], "m"),
            "matchmaking-bots": ServiceEndpoint("127.0.0.1:6", "m"),  # not a replica: no number
            "table": ServiceEndpoint("127.0.0.1:3", "m"),
        },
        targets={"matchmaking": grpc_target(replicas)},
    )
    state.write(tmp_path / "stack.json")
    assert (
        service_addresses(tmp_path / "stack.json", environ={})["matchmaking"]
        == "ipv4:127.0.0.1:2,127.0.0.1:4"
    )
    assert StackState.read(tmp_path / "stack.json") == state
    assert (tmp_path / "stack.json").stat().st_mode & 0o077 == 0, "it holds the database admin URL"
    assert state.target("table") == "127.0.0.1:3"
    assert state.instances("matchmaking") == ["matchmaking", "matchmaking-2"]
    with pytest.raises(ValueError, match="IPv4:PORT"):
        grpc_target(["matchmaking:50051", "127.0.0.1:4"])


def test_make_run_names_each_process_of_a_service_it_runs_several_of(tmp_path: Path) -> None:
    def names(environ: dict[str, str], service: str) -> list[str]:
        return Stack(tmp_path, [service], environ)._instances(service)

    assert len(names({}, "matchmaking")) == DEFAULT_MATCHMAKING_REPLICAS
    assert names({"MATCHMAKING_REPLICAS": "3"}, "matchmaking") == [
        "matchmaking",
        "matchmaking-2",
        "matchmaking-3",
    ]
    assert names({"TABLE_SERVERS": "2", "MATCHMAKING_REPLICAS": "2"}, "table") == ["table", "table-2"]
    assert names({"MATCHMAKING_REPLICAS": "2"}, "wallet") == ["wallet"]
    for wrong in ("0", "17", "two"):
        with pytest.raises(StackError, match=f"^MATCHMAKING_REPLICAS='?{wrong}'? "):
            Stack(tmp_path, ["matchmaking"], {"MATCHMAKING_REPLICAS": wrong})


def test_operations_doc_lists_every_setting_of_the_platform_and_the_skeleton_services() -> None:
    from services.matchmaking.config import MatchmakingConfig
    from services.scoring.config import ScoringConfig
    from services.table.config import TableConfig

    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    for config_class in (ServiceConfig, MatchmakingConfig, ScoringConfig, TableConfig):
        for variable, _default, _help in config_class.settings_table():
            assert f"`{variable}`" in doc, f"docs/operations.md does not document {variable}"


def test_cancel_and_wait_repeats_a_lost_cancel_and_gives_up_on_a_deaf_task() -> None:
    async def loses_one_cancel(lost: list[bool]) -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if lost:
                    raise
                lost.append(True)

    async def deaf(release: asyncio.Event) -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    async def crashes() -> None:
        raise RuntimeError("crashed before the stop")

    async def main() -> tuple[list[bool], bool, bool, bool]:
        lost: list[bool] = []
        release = asyncio.Event()
        tasks = [asyncio.create_task(c) for c in (loses_one_cancel(lost), deaf(release), crashes())]
        await asyncio.sleep(0)
        left = await cancel_and_wait(tasks, within=1.2, first_wait=0.1)
        outcome = (lost, tasks[0].cancelled(), left == [tasks[1]], tasks[2].done())
        release.set()
        await tasks[1]
        return outcome

    lost, cancelled, deaf_left, crashed_done = asyncio.run(main())
    assert lost == [True] and cancelled and deaf_left and crashed_done


def _text_fields(descriptor: Any, prefix: str = "", seen: frozenset[str] = frozenset()) -> Iterator[str]:
    """Paths of every string field a request of ``descriptor`` can hold (repeated ones as ``name[0]``)."""
    for field in descriptor.fields:
        name = prefix + field.name + ("[0]" if field.is_repeated else "")
        if field.type == FieldDescriptor.TYPE_STRING:
            yield name
        elif field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.full_name not in seen:
            yield from _text_fields(field.message_type, name + ".", seen | {descriptor.full_name})


def _with_text(message_class: Any, path: str, text: str) -> Message:
    message = message_class()
    *parents, leaf = path.split(".")
    target = message
    for part in parents:
        name, repeated = part.removesuffix("[0]"), part.endswith("[0]")
        target = getattr(target, name).add() if repeated else getattr(target, name)
    if leaf.endswith("[0]"):
        getattr(target, leaf.removesuffix("[0]")).append(text)
    else:
        setattr(target, leaf, text)
    return message


def _request_classes() -> list[Any]:
    from duelmahjong.v1 import archive_pb2, matchmaking_pb2, scoring_pb2, table_pb2, wallet_pb2

    classes = []
    for module in (wallet_pb2, table_pb2, matchmaking_pb2, scoring_pb2, archive_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                classes.append(message_factory.GetMessageClass(method.input_type))
    return classes


CONTROLS = (("a\x00b", "U+0000"), ("line\nbreak", "U+000A"), ("\x7f", "U+007F"), ("x\x85", "U+0085"))


def test_every_text_field_of_every_request_refuses_control_characters_and_huge_text_naming_it() -> None:
    checked = 0
    for request_class in _request_classes():
        for path in _text_fields(request_class.DESCRIPTOR):
            assert validation.refused_text(_with_text(request_class, path, "5m 東 ok")) is None, path
            for bad, why in (
                ("a\x00b", "U+0000"),
                ("line\nbreak", "U+000A"),
                ("\x7f", "U+007F"),
                ("x\x85", "U+0085"),
            ):
                problem = validation.refused_text(_with_text(request_class, path, bad))
                assert problem is not None and f"the field {path} " in problem and why in problem, (
                    path,
                    problem,
                )
            problem = validation.refused_text(_with_text(request_class, path, "漢" * 1025))
            assert problem is not None and f"the field {path} is 1025 characters long" in problem, path
            assert validation.refused_text(_with_text(request_class, path, "漢" * 1024)) is None, path
            checked += 1
    assert checked >= 40  # wallet, table (the Play actions too), matchmaking and scoring


def test_text_check_walks_map_entries_and_names_them() -> None:
    from google.protobuf import struct_pb2

    value = struct_pb2.Struct()
    value.update({"fine": "ok", "bad": "a\x00"})
    assert validation.refused_text(value) == (
        "the field fields['bad'].string_value holds a control character (U+0000); "
        "text fields take printable text only"
    )
    value = struct_pb2.Struct()
    value.update({"k\x01": 1})
    assert "fields key holds a control character (U+0001)" in (validation.refused_text(value) or "")


def test_rate_limiter_refills_forgets_least_recent_keys_and_can_be_off() -> None:
    from duelmahjong.platform.ratelimit import RateLimiter, client_address

    now = [0.0]
    limit = RateLimiter(per_minute=60, burst=2, clock=lambda: now[0], max_keys=2)
    assert [limit.take("a"), limit.take("a")] == [0.0, 0.0]
    assert limit.take("a") == pytest.approx(1.0)
    now[0] = 100.0  # a long wait refills to the burst, never beyond it
    assert [limit.take("a") for _ in range(3)][2] > 0
    limit.take("b"), limit.take("c")  # three keys: "a", used least recently, is forgotten
    assert limit.take("a") == 0.0
    off = RateLimiter(per_minute=0, burst=1)
    assert off.unlimited and all(off.take("x") == 0.0 for _ in range(1000))
    with pytest.raises(ValueError):
        RateLimiter(per_minute=-1, burst=1)
    assert client_address("ipv4:10.0.0.1:1") == client_address("ipv4:10.0.0.1:2")
    assert client_address("ipv6:[2001:db8::1]:1") == client_address("ipv6:[2001:db8::ffff]:1")


def test_make_run_issues_each_process_a_certificate_of_its_own_unless_plaintext(tmp_path: Path) -> None:
    stack = Stack(tmp_path, ["wallet"], {"TLS_CERT_FILE": "mine.pem"})
    settings = stack.tls_settings("wallet")
    assert settings["TLS_CERT_FILE"] == str(tmp_path / "tls" / "wallet.pem")
    assert settings["TLS_CA_FILE"] == str(tmp_path / "tls" / "ca.pem") == str(stack.client_tls.ca_file)
    assert stack.tls_settings("table-2")["TLS_KEY_FILE"] == str(tmp_path / "tls" / "table-2-key.pem")
    plaintext = Stack(tmp_path / "plain", ["wallet"], {"GRPC_PLAINTEXT": "true"})
    assert plaintext.tls_settings("wallet") == {"GRPC_PLAINTEXT": "true"}
    assert plaintext.client_tls.plaintext and not (tmp_path / "plain" / "tls").exists()
