"""Endpoints as they are in 2026: reasoning models' refusals, streamed answers, pinned addresses, https keys."""

from __future__ import annotations

import socket

import pytest

from evaluator import generation as gen
from evaluator.generation.adapt import DEFAULT_TEMPERATURE_NOTE, one_line
from tests.evaluator.fake_endpoint import PAGE, FakeEndpoint, Reply, completion, stream_events
from tests.evaluator.test_generation import API_KEY, Sleeps, config, make_dataset


@pytest.fixture
def data(tmp_path, testsrc_video):
    return make_dataset(tmp_path / "set", testsrc_video)


@pytest.fixture(scope="module")
def testsrc_video(tmp_path_factory):
    from tests.evaluator.test_generation import make_video

    return make_video(tmp_path_factory.mktemp("video") / "t.mp4", "testsrc=size=160x120:rate=5:duration=2")


def run(data, out, cfg, **kwargs):
    return gen.generate(data, out, cfg, sleep=Sleeps(), **kwargs)


def test_the_fake_endpoint_in_reasoning_model_mode_gets_every_page(data, tmp_path):
    """max_tokens and temperature 0 refused: each refusal is recognised once, the request changed and sent again;
    the report says the model ran at its default temperature and keeps the reasoning tokens."""
    with FakeEndpoint(reasoning=True, sse=True) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint))
    assert report["summary"]["ok"] == 2 and report["summary"]["failed"] == 0
    assert report["summary"]["temperature"] == "default"
    assert DEFAULT_TEMPERATURE_NOTE in report["notes"] and len(report["notes"]) == 2
    first, second, third, fourth = endpoint.requests  # task one: three tries; task two: learned shape at once
    assert "max_tokens" in first.body and first.body["temperature"] == 0
    assert "max_tokens" not in second.body and second.body["max_completion_tokens"] == 4000
    assert "temperature" not in third.body and "temperature" not in fourth.body
    assert fourth.body["max_completion_tokens"] == 4000 and fourth.body["stream"] is True
    for outcome in report["tasks"].values():
        assert outcome["request"] == {"length_parameter": "max_completion_tokens", "temperature": "default",
                                      "stream": True, "stream_options": True}
        assert outcome["usage"]["reasoning_tokens"] == 2000 and outcome["usage"]["completion_tokens"] == 2300
    assert report["summary"]["usage"]["reasoning_tokens"] == 4000
    assert (tmp_path / "out" / "1" / "index.html").read_text().startswith("<!DOCTYPE html>")
    assert sum(outcome["attempts"] for outcome in report["tasks"].values()) == 4


def test_the_explicit_options_ask_in_the_reasoning_shape_from_the_start(data, tmp_path):
    with FakeEndpoint(reasoning=True) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, default_temperature=True,
                                                    length_parameter="max_completion_tokens", stream=False))
    assert report["summary"]["ok"] == 2 and len(endpoint.requests) == 2 and report["notes"] == []
    assert report["endpoint"]["temperature"] == "default" and report["summary"]["temperature"] == "default"
    assert all("stream" not in request.body and "temperature" not in request.body for request in endpoint.requests)


def test_a_refusal_naming_nothing_we_can_change_still_fails_the_task_at_once(data, tmp_path):
    refusal = {"error": {"message": "max_tokens is too large: 400000 > 128000", "param": "max_tokens"}}
    with FakeEndpoint([Reply(400, refusal)]) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, retries=0), task_keys=["1"])
    assert len(endpoint.requests) == 1 and report["tasks"]["1"]["status"] == "failed"
    assert "HTTP 400" in report["tasks"]["1"]["reason"] and "too large" in report["tasks"]["1"]["reason"]


def test_the_command_line_has_the_reasoning_options(data, tmp_path, monkeypatch, capsys):
    from evaluator.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with FakeEndpoint(reasoning=True) as endpoint:
        code = main(["generate", "--data", str(data), "--out", str(tmp_path / "out"), "--base-url", endpoint.base_url,
                     "--model", "o-model", "--allow-plain-http", "--default-temperature",
                     "--length-parameter", "max_completion_tokens", "--no-stream"])
    assert code == 0 and len(endpoint.requests) == 2
    with FakeEndpoint(reasoning=True) as endpoint:
        code = main(["generate", "--data", str(data), "--out", str(tmp_path / "auto"), "--base-url", endpoint.base_url,
                     "--model", "o-model", "--allow-plain-http"])
    assert code == 0 and f"note: {DEFAULT_TEMPERATURE_NOTE}" in capsys.readouterr().err


# --------------------------------------------------------------------------- streaming


def test_a_streamed_answer_survives_a_gateway_that_drops_idle_connections(data, tmp_path):
    """A gateway drops connections silent for 1 s. A 1.5 s answer read whole never arrives; streamed, it does."""
    slow = [Reply(body=completion(), delay=1.5)] * 2
    with FakeEndpoint(slow, gateway_idle=1.0) as endpoint:
        whole = run(data, tmp_path / "whole", config(endpoint, stream=False, retries=1), task_keys=["1"])
    assert whole["tasks"]["1"]["status"] == "failed" and "could not reach" in whole["tasks"]["1"]["reason"]
    with FakeEndpoint(sse=True, event_gap=0.25, gateway_idle=1.0) as endpoint:
        streamed = run(data, tmp_path / "streamed", config(endpoint), task_keys=["1"])
    assert streamed["tasks"]["1"]["status"] == "ok" and endpoint.requests[0].body["stream"] is True
    assert endpoint.requests[0].body["stream_options"] == {"include_usage": True}
    assert streamed["tasks"]["1"]["usage"]["total_tokens"] == 1500
    assert PAGE[:40] in (tmp_path / "streamed" / "1" / "index.html").read_text()


def test_a_stream_cut_short_is_retried_and_keep_alive_comments_are_skipped(data, tmp_path):
    cut = stream_events()[:3]  # role and two pieces: no finish, no [DONE]
    events = [": keep-alive", *stream_events()]
    with FakeEndpoint([Reply(events=cut), Reply(events=events)], sse=True) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), task_keys=["1"])
    assert report["tasks"]["1"]["status"] == "ok" and report["tasks"]["1"]["attempts"] == 2
    assert len(endpoint.requests) == 2


def test_an_error_inside_the_stream_is_one_scrubbed_line(data, tmp_path):
    error = {"error": {"message": f"upstream failed\nwith key {API_KEY}"}}
    with FakeEndpoint([Reply(events=[error])] * 2, sse=True) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, retries=1), task_keys=["1"])
    reason = report["tasks"]["1"]["reason"]
    assert "upstream failed with key [api key]" in reason and "\n" not in reason and API_KEY not in reason
    assert len(endpoint.requests) == 2


# --------------------------------------------------------------------------- addresses, keys, error text


def test_each_request_connects_to_the_address_it_resolved_and_checked(data, tmp_path, monkeypatch):
    """The name is looked up once per request; the connection goes to that address with the name as Host,
    so a lookup answering differently afterwards (DNS rebinding) is never asked."""
    real = socket.getaddrinfo
    lookups = []

    def resolver(host, port, *args, **kwargs):
        if host == "model.test":
            lookups.append(host)
            # first answer: the fake endpoint; any later one: an address where nothing listens
            address = "127.0.0.1" if len(lookups) % 2 == 1 else "127.0.0.2"
            return real(address, port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    with FakeEndpoint() as endpoint:
        port = endpoint.base_url.split(":")[2].split("/")[0]
        cfg = config(endpoint, base_url=f"http://model.test:{port}/v1", api_key="")
        report = run(data, tmp_path / "out", cfg, task_keys=["1"])
    assert report["tasks"]["1"]["status"] == "ok", report["tasks"]["1"]["reason"]
    assert lookups == ["model.test"]
    assert endpoint.requests[0].headers["Host"] == f"model.test:{port}"


def test_public_only_refuses_a_host_resolving_to_a_private_address_before_connecting(data, tmp_path):
    with FakeEndpoint() as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, public_only=True, api_key=""), task_keys=["1"])
    assert endpoint.requests == []
    assert "resolves to a non-public address (127.0.0.1)" in report["tasks"]["1"]["reason"]


@pytest.mark.parametrize(("url", "allow", "problem"), [
    ("http://api.example.test/v1", True, "an API key is only sent over https"),
    ("http://127.0.0.1:8000/v1", False, "needs the development option"),
    ("http://localhost:8000/v1", False, "needs the development option"),
])
def test_an_api_key_goes_only_over_https(url, allow, problem):
    with pytest.raises(gen.ConfigError, match=problem):
        gen.EndpointConfig(base_url=url, model="m", api_key=API_KEY, allow_plain_http=allow)


def test_plain_http_is_fine_without_a_key_and_to_this_machine_when_allowed():
    gen.EndpointConfig(base_url="http://api.example.test/v1", model="m", allow_plain_http=False)
    gen.EndpointConfig(base_url="http://localhost:8000/v1", model="m", api_key=API_KEY, allow_plain_http=True)
    gen.EndpointConfig(base_url="https://api.example.test/v1", model="m", api_key=API_KEY, allow_plain_http=False)


def test_the_environment_gives_the_development_permission(monkeypatch):
    monkeypatch.setenv("IWR_GENERATION_ALLOW_PLAIN_HTTP", "1")
    assert gen.EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=API_KEY).allow_plain_http
    monkeypatch.setenv("IWR_GENERATION_ALLOW_PLAIN_HTTP", "0")
    with pytest.raises(gen.ConfigError):
        gen.EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=API_KEY)


def test_an_endpoints_error_body_reaches_the_submitter_as_one_short_scrubbed_line(data, tmp_path):
    body = {"error": {"message": f"Bad request.\n\nYou sent Authorization: Bearer {API_KEY}; also "
                                 "sk-live-abcdefghijklmnop and " + "more words " * 500}}
    with FakeEndpoint([Reply(422, body)]) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), task_keys=["1"])
    reason = report["tasks"]["1"]["reason"]
    assert reason.startswith("the endpoint rejected the request (HTTP 422): Bad request. You sent")
    assert API_KEY not in reason and "sk-live" not in reason and "\n" not in reason
    assert len(reason) <= 500 and reason.endswith("\u2026")


def test_one_line_removes_keys_controls_and_length():
    line = one_line("a\x1b[31m\tb Bearer abc.def " + "A1" * 20 + " api_0123456789abcdef", "", 60)
    assert line == "a [31m b Bearer [redacted] [redacted] [redacted]"
    assert len(one_line("yes " * 500, "", 50)) == 50


def certificate(tmp_path, name: str):
    """A self-signed certificate for ``name``: (server context, client context trusting it)."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client


@pytest.mark.parametrize("certified", ["model.test", "other.test"])
def test_https_to_the_checked_address_sends_the_name_for_sni_and_checks_the_certificate_against_it(
        data, tmp_path, monkeypatch, certified):
    """Connecting to the resolved address does not weaken TLS: the server sees the host name (SNI) and the
    certificate must be valid for that name; the key goes over it."""
    from evaluator.generation import transport

    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: real(
        "127.0.0.1" if host == "model.test" else host, port, *a, **k))
    server_tls, client_tls = certificate(tmp_path, certified)
    monkeypatch.setattr(transport, "tls_context", lambda: client_tls)
    with FakeEndpoint(tls=server_tls) as endpoint:
        cfg = config(endpoint, base_url=f"https://model.test:{endpoint.port}/v1", allow_plain_http=False)
        report = run(data, tmp_path / "out", cfg, task_keys=["1"])
    assert endpoint.server_names[:1] == ["model.test"]
    outcome = report["tasks"]["1"]
    if certified == "model.test":
        assert outcome["status"] == "ok", outcome["reason"]
        assert endpoint.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"
    else:
        assert outcome["status"] == "failed" and endpoint.requests == []
        assert "TLS certificate is not valid for model.test" in outcome["reason"]


@pytest.mark.parametrize(("message", "changed"), [
    ("Unrecognized request argument supplied: stream_options", "stream_options"),
    ("'stream' is not supported with this model", "stream"),
])
def test_endpoints_refusing_streams_get_answers_read_whole(data, tmp_path, message, changed):
    with FakeEndpoint([Reply(400, {"error": {"message": message}})]) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), task_keys=["1"])
    assert report["tasks"]["1"]["status"] == "ok" and len(endpoint.requests) == 2
    first, second = (request.body for request in endpoint.requests)
    assert changed in first and changed not in second
    assert report["tasks"]["1"]["request"][changed] is False and len(report["notes"]) == 1
