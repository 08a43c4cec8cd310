"""Generating pages from an OpenAI-compatible endpoint: request shape, limits, retries, failures."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path

import pytest

from evaluator import generation as gen
from evaluator.cli import main
from tests.evaluator.fake_endpoint import PAGE, FakeEndpoint, Reply, completion, mean_red
from tests.evaluator.fixtures.dataset_builder import ACTIONS, build_dataset, image_bytes

API_KEY = "sk-test-5ecret-generation-key-0123456789"


def make_video(path: Path, source: str, *filters: str) -> Path:
    command = ["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source, *filters,
               "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(command, check=True, timeout=60)
    return path


@pytest.fixture(scope="module")
def testsrc_video(tmp_path_factory) -> Path:
    """Three seconds of ffmpeg's test pattern at 5 fps: three frames at 1 fps."""
    return make_video(tmp_path_factory.mktemp("video") / "testsrc.mp4", "testsrc=size=320x240:rate=5:duration=3")


@pytest.fixture(scope="module")
def ramp_video(tmp_path_factory) -> Path:
    """Four seconds whose red channel rises with time, so frame order can be checked."""
    return make_video(tmp_path_factory.mktemp("video") / "ramp.mp4", "color=c=black:s=64x48:r=5:d=4",
                      "-vf", "geq=r='min(255,T*60)':g=128:b=128")


def make_dataset(root: Path, video: Path, sheets: int = 1) -> Path:
    """Two tasks ("1" and "todo-b") sharing ``video``, each with ``sheets`` stitched images."""
    data = build_dataset(root)
    for key in ("1", "todo-b"):
        folder = root / "data" / key
        (folder / "video.mp4").write_bytes(video.read_bytes())
        for old in (folder / "stitched_assets").iterdir():
            old.unlink()
        for n in range(1, sheets + 1):
            colour = (10 * n, 200, 30)
            (folder / "stitched_assets" / f"stitched_image_{n}.png").write_bytes(image_bytes((40, 20), colour))
    return data


def config(endpoint: FakeEndpoint, **changes) -> gen.EndpointConfig:
    base = {"base_url": endpoint.base_url, "model": "vision-model-7b", "api_key": API_KEY, "max_tokens": 4000,
            "timeout": 5.0, "retries": 3, "backoff": 0.5, "max_wait": 30.0, "allow_plain_http": True}
    return gen.EndpointConfig(**{**base, **changes})


class Sleeps(list):
    """Records waits instead of sleeping, so retry tests stay fast."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def run(data, out, cfg, keys=("1",), **kwargs) -> dict:
    kwargs.setdefault("sleep", Sleeps())
    return gen.generate(data, out, cfg, list(keys) if keys else None, **kwargs)


# --------------------------------------------------------------------------- the request


def test_it_sends_stitched_images_first_then_frames_in_time_order(tmp_path, ramp_video):
    """Request: model id, temperature 0, key as bearer token, sheets in natural order, then frames by time."""
    data = make_dataset(tmp_path / "set", ramp_video, sheets=10)
    with FakeEndpoint() as endpoint:
        report = run(data, tmp_path / "out", config(endpoint))
    request = endpoint.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == "vision-model-7b"
    assert request.body["temperature"] == 0 and request.body["max_tokens"] == 4000
    images = request.images
    folder = tmp_path / "set" / "data" / "1" / "stitched_assets"
    sheets = [folder / f"stitched_image_{n}.png" for n in range(1, 11)]  # natural order: 2 before 10
    assert [data for _mime, data in images[:10]] == [path.read_bytes() for path in sheets]
    frames = images[10:]
    assert len(frames) == 4 and {mime for mime, _ in frames} == {"image/jpeg"}
    reds = [mean_red(data) for _mime, data in frames]
    assert reds == sorted(reds) and reds[-1] > reds[0] + 100
    assert report["tasks"]["1"]["images"] == {"stitched": 10, "frames": 4}


def test_the_prompt_states_the_rules_and_resolution_but_no_ground_truth(tmp_path, testsrc_video):
    """The prompt gives the resolution and page rules; action descriptions and assertions are never sent."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    with FakeEndpoint() as endpoint:
        run(data, tmp_path / "out", config(endpoint))
    text = endpoint.requests[0].text
    for rule in ("320x200", 'class "btn"', "__PLACEHOLDER_ASSETS_BASE_DIR__/", "width and height", "```html",
                 "no external libraries", "imitate the server"):
        assert rule in text
    raw = json.dumps(endpoint.requests[0].body)
    for action in ACTIONS:
        assert action["parameters"]["description"] not in raw
        assert not action["logical_assertion"] or action["logical_assertion"] not in raw
    assert "todo.example.test" not in raw


def test_it_samples_one_frame_per_second_within_the_limits(tmp_path, testsrc_video):
    """A 3 s video gives 3 frames; the frame limit and the total image limit both cut that down."""
    data = make_dataset(tmp_path / "set", testsrc_video, sheets=2)
    with FakeEndpoint() as endpoint:
        run(data, tmp_path / "a", config(endpoint))
        run(data, tmp_path / "b", config(endpoint, max_frames=2))
        run(data, tmp_path / "c", config(endpoint, max_images=3))
        report = run(data, tmp_path / "d", config(endpoint, max_images=2))
    assert [len(request.images) for request in endpoint.requests] == [5, 4, 3, 2]
    assert [mime for mime, _ in endpoint.requests[2].images] == ["image/png", "image/png", "image/jpeg"]
    assert any("no video frame" in warning for warning in report["tasks"]["1"]["warnings"])


def test_frames_beyond_the_budget_are_picked_evenly_over_the_recording():
    """Too many frames: first and last kept, the rest spread evenly; few frames are all kept."""
    frames = list(range(100))
    assert gen.pick_evenly(frames, 5) == [0, 25, 50, 74, 99]  # round() halves to even
    assert gen.pick_evenly(frames[:3], 64) == [0, 1, 2]
    assert gen.pick_evenly(frames, 1) == [0] and gen.pick_evenly(frames, 0) == []


def test_it_writes_the_post_processed_page_and_a_report(tmp_path, testsrc_video):
    """The page is the fenced block with iframes stripped (placeholder kept); the report has usage."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    with FakeEndpoint() as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), keys=None)
    page = (tmp_path / "out" / "1" / "index.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<iframe" not in page and "tracker.example" not in page
    assert '__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png' in page and "Here is the page" not in page
    assert (tmp_path / "out" / "todo-b" / "index.html").is_file()
    stored = json.loads((tmp_path / "out" / "generation.json").read_text())
    assert stored == report
    assert report["tasks"]["1"]["status"] == "ok" and report["tasks"]["1"]["usage"]["total_tokens"] == 1500
    assert report["summary"] == {"tasks": 2, "ok": 2, "failed": 0,
                                 "usage": {"prompt_tokens": 2400, "completion_tokens": 600, "total_tokens": 3000},
                                 "temperature": 0}
    assert report["endpoint"]["model"] == "vision-model-7b" and report["endpoint"]["temperature"] == 0
    assert report["notes"] == [] and report["tasks"]["1"]["request"]["temperature"] == 0


# --------------------------------------------------------------------------- failures and retries


def failed_reason(tmp_path, video, script, **changes) -> tuple[str, FakeEndpoint, dict]:
    data = make_dataset(tmp_path / "set", video)
    with FakeEndpoint(script) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, **changes))
    outcome = report["tasks"]["1"]
    assert outcome["status"] == "failed" and not (tmp_path / "out" / "1" / "index.html").exists()
    return outcome["reason"], endpoint, report


def test_a_refused_key_fails_at_once_with_the_endpoint_message(tmp_path, testsrc_video):
    """HTTP 401 is not retried; the reason says the key was refused and never echoes the key."""
    body = {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "invalid_request_error"}}
    reason, endpoint, _ = failed_reason(tmp_path, testsrc_video, [Reply(401, body)])
    assert len(endpoint.requests) == 1
    assert "refused the API key (HTTP 401)" in reason and "Incorrect API key" in reason
    assert API_KEY not in reason


def test_a_rate_limit_is_retried_after_the_time_the_endpoint_asks(tmp_path, testsrc_video):
    """429 with Retry-After: 7, then success: one wait of 7 s and the page is written."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    sleeps = Sleeps()
    with FakeEndpoint([Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "7"})]) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), sleep=sleeps)
    assert sleeps == [7.0] and len(endpoint.requests) == 2
    assert report["tasks"]["1"]["status"] == "ok" and report["tasks"]["1"]["attempts"] == 2
    assert (tmp_path / "out" / "1" / "index.html").is_file()


def test_a_rate_limit_that_never_ends_gives_up_after_the_retries(tmp_path, testsrc_video):
    """429 forever: 1 + retries attempts with doubling waits, then a clear reason."""
    script = [Reply(429, {"error": {"message": "quota"}}) for _ in range(10)]
    data = make_dataset(tmp_path / "set", testsrc_video)
    sleeps = Sleeps()
    with FakeEndpoint(script) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, retries=3), sleep=sleeps)
    assert len(endpoint.requests) == 4 and sleeps == [0.5, 1.0, 2.0]
    assert report["tasks"]["1"]["reason"].startswith("the endpoint was still rate limiting (HTTP 429) after 4 attempts")


def test_server_errors_are_retried_and_a_long_retry_after_is_capped(tmp_path, testsrc_video):
    """503 then 500 then success; a Retry-After of an hour waits only max_wait."""
    script = [Reply(503, "upstream down", {"Retry-After": "3600"}), Reply(500, {"error": "boom"})]
    data = make_dataset(tmp_path / "set", testsrc_video)
    sleeps = Sleeps()
    with FakeEndpoint(script) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint, max_wait=4.0), sleep=sleeps)
    assert sleeps == [4.0, 1.0] and len(endpoint.requests) == 3
    assert report["tasks"]["1"]["status"] == "ok"


def test_a_request_that_times_out_is_retried_then_fails_with_the_timeout(tmp_path, testsrc_video):
    """The endpoint answers after 2 s, the timeout is 0.3 s: two attempts, then a timeout reason."""
    script = [Reply(body=completion(), delay=2.0) for _ in range(2)]
    started = time.monotonic()
    reason, endpoint, _ = failed_reason(tmp_path, testsrc_video, script, timeout=0.3, retries=1)
    assert len(endpoint.requests) == 2 and time.monotonic() - started < 4
    assert reason == "the endpoint gave no complete answer within the 0.3 s request timeout (2 attempts)"


@pytest.mark.parametrize(("reply", "expected"), [
    (Reply(body="<html>gateway says hi</html>"), "the endpoint's answer is not valid JSON (it starts '<html>"),
    (Reply(body={"object": "error"}), "the endpoint's answer has no choices[0].message"),
    (Reply(body=completion(content="")), "the model's answer is empty (finish_reason=stop)"),
    (Reply(body=completion(content=None, finish_reason="content_filter")),
     "the model's answer is empty (finish_reason=content_filter)"),
    (Reply(body=completion(content="Sorry, I cannot build web pages.")),
     "the model's answer holds no ```html fenced block (it starts 'Sorry, I cannot"),
    (Reply(body=completion(content="```html\n\n```")), "the model's ```html block is empty"),
    (Reply(404, {"error": {"message": "Not found"}}), "no chat-completions endpoint at http://127.0.0.1:"),
    (Reply(400, {"error": {"message": "image too large"}}),
     "the endpoint rejected the request (HTTP 400): image too large"),
])
def test_malformed_or_refused_answers_end_the_task_with_a_clear_reason(tmp_path, testsrc_video, reply, expected):
    """Each bad answer is not retried and names what was wrong."""
    reason, endpoint, report = failed_reason(tmp_path, testsrc_video, [reply])
    assert reason.startswith(expected), reason
    assert len(endpoint.requests) == 1 and report["summary"]["failed"] == 1


def test_a_cut_off_answer_keeps_its_page_with_a_warning(tmp_path, testsrc_video):
    """finish_reason=length without a closing fence: the page is what came, and the report says so."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    reply = Reply(body=completion(content="```html\n<html><body><p>half", finish_reason="length"))
    with FakeEndpoint([reply]) as endpoint:
        report = run(data, tmp_path / "out", config(endpoint))
    assert (tmp_path / "out" / "1" / "index.html").read_text() == "<html><body><p>half"
    assert report["tasks"]["1"]["warnings"] == ["the answer was cut off at the max tokens limit"]
    assert len(endpoint.requests) == 1


def test_a_garbled_http_answer_is_retried_like_a_dropped_connection(tmp_path, testsrc_video):
    """A response that is not HTTP at all: retried, then reported as an unreachable endpoint."""
    script = [Reply(raw=b"garbage that is not HTTP\r\n\r\n") for _ in range(2)]
    reason, endpoint, _ = failed_reason(tmp_path, testsrc_video, script, retries=1)
    assert len(endpoint.requests) == 2
    assert reason == "could not reach the endpoint (BadStatusLine) in 2 attempts"


def test_a_redirect_is_not_followed_so_the_key_stays_with_the_endpoint(tmp_path, testsrc_video):
    """A 307 to another server is reported, and that server never receives the Authorization header."""
    with FakeEndpoint() as elsewhere:
        target = elsewhere.base_url + "/chat/completions"
        reason, _endpoint, _ = failed_reason(tmp_path, testsrc_video, [Reply(307, "", {"Location": target})])
    assert elsewhere.requests == []
    assert reason == f"the endpoint redirected to {target} (HTTP 307); give that address as the base URL"


def test_an_unreadable_video_fails_only_that_task(tmp_path, testsrc_video):
    """A task whose video is not a video fails with the reason; the other task still gets its page."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    (tmp_path / "set" / "data" / "1" / "video.mp4").write_bytes(b"not a video")
    with FakeEndpoint() as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), keys=None)
    assert report["tasks"]["1"]["reason"].startswith("the task's video could not be read")
    assert report["tasks"]["todo-b"]["status"] == "ok" and len(endpoint.requests) == 1


def test_no_task_starts_after_the_overall_deadline(tmp_path, testsrc_video):
    """A deadline already past: nothing is requested and every task says why."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    with FakeEndpoint() as endpoint:
        report = run(data, tmp_path / "out", config(endpoint), keys=None, deadline=time.monotonic() - 1)
    assert endpoint.requests == []
    assert {o["reason"] for o in report["tasks"].values()} == {"not generated: the overall time limit was reached"}


def test_a_resumed_run_only_asks_for_the_pages_still_missing(tmp_path, testsrc_video):
    """First run: task 1 fails (401); resumed run asks only for task 1 and keeps todo-b's page."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    with FakeEndpoint([Reply(401, {"error": "bad key"})]) as endpoint:
        first = run(data, tmp_path / "out", config(endpoint), keys=None)
        seen = []
        second = run(data, tmp_path / "out", config(endpoint), keys=None, resume=True, on_task=seen.append)
    assert first["summary"]["ok"] == 1 and second["summary"]["ok"] == 2
    assert len(endpoint.requests) == 3 and sorted(o.key for o in seen) == ["1", "todo-b"]


def test_the_key_is_never_logged_or_written(tmp_path, testsrc_video, caplog):
    """Across successes, retries and refusals the key appears in no log line and no output file."""
    caplog.set_level(logging.DEBUG)
    data = make_dataset(tmp_path / "set", testsrc_video)
    script = [Reply(429, {"error": f"key {API_KEY} throttled"}), Reply(401, {"error": f"bad {API_KEY}"})]
    with FakeEndpoint(script) as endpoint:
        cfg = config(endpoint)
        run(data, tmp_path / "out", cfg, keys=None)
    assert API_KEY not in caplog.text and API_KEY not in repr(cfg)
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or API_KEY.encode() not in path.read_bytes()


@pytest.mark.parametrize(("changes", "expected"), [
    ({"max_images": 71}, "max images must be 1-70"),
    ({"max_frames": 65}, "max frames must be 1-64"),
    ({"base_url": "ftp://example.com/v1"}, "must start with http:// or https://"),
    ({"base_url": "https://user:pw@example.com/v1"}, "must not hold credentials"),
    ({"model": " "}, "the model id is empty"),
])
def test_unusable_settings_are_refused_with_the_reason(changes, expected):
    """Limits above the protocol's, odd URLs and empty model ids are refused before any request."""
    settings = {"base_url": "https://api.example.com/v1", "model": "m", **changes}
    with pytest.raises(gen.ConfigError, match=expected.replace("/", ".").replace("+", ".")):
        gen.EndpointConfig(**settings)


def test_the_chat_completions_url_is_derived_from_the_base_url():
    """/v1 and /v1/ get /chat/completions appended; a full URL is used as given."""
    urls = {gen.EndpointConfig(base_url=base, model="m").url
            for base in ("https://h/v1", "https://h/v1/", "https://h/v1/chat/completions")}
    assert urls == {"https://h/v1/chat/completions"}


def test_retry_after_is_read_as_seconds_or_a_date():
    """Both header forms give a wait in seconds; junk gives none."""
    assert gen.parse_retry_after("12") == 12.0
    from email.utils import formatdate

    assert 25 < gen.parse_retry_after(formatdate(time.time() + 30, usegmt=True)) <= 30
    assert gen.parse_retry_after("soon") is None and gen.parse_retry_after(None) is None


# --------------------------------------------------------------------------- command line


def test_the_command_generates_a_bundle_with_the_key_from_the_environment(tmp_path, testsrc_video, monkeypatch,
                                                                          capsys):
    """`generate` reads the key from --api-key-env, writes pages, prints no key; exit 0."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    monkeypatch.setenv("MY_ENDPOINT_KEY", API_KEY)
    with FakeEndpoint() as endpoint:
        code = main(["generate", "--data", str(data), "--out", str(tmp_path / "out"), "--base-url",
                     endpoint.base_url, "--model", "m1", "--api-key-env", "MY_ENDPOINT_KEY", "--max-frames", "2",
                     "--max-tokens", "900", "--allow-plain-http"])
    assert code == 0
    assert endpoint.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"
    assert endpoint.requests[0].body["max_tokens"] == 900 and len(endpoint.requests[0].images) == 3
    assert (tmp_path / "out" / "todo-b" / "index.html").read_text().endswith(PAGE[-20:])
    out = capsys.readouterr()
    assert "2 of 2 task(s) got a page" in out.out and API_KEY not in out.out + out.err


def test_the_command_exits_1_when_a_task_got_no_page(tmp_path, testsrc_video, monkeypatch, capsys):
    """One refused task: exit status 1 and the reason printed."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with FakeEndpoint([Reply(401, {"error": "no"})]) as endpoint:
        code = main(["generate", "--data", str(data), "--out", str(tmp_path / "out"), "--base-url",
                     endpoint.base_url, "--model", "m1", "--retries", "0", "--allow-plain-http"])
    assert code == 1
    assert "no page: the endpoint refused the API key (HTTP 401)" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    (["--api-key-env", "IWR_UNSET_KEY_VAR"], "environment variable IWR_UNSET_KEY_VAR is not set"),
    (["--max-images", "80"], "max images must be 1-70"),
    (["--tasks", "nope"], "no task 'nope'"),
])
def test_the_command_refuses_unusable_input_in_one_line(tmp_path, testsrc_video, monkeypatch, capsys, argv,
                                                        expected):
    """A missing key variable, limits above the protocol's or an unknown task: exit 2 and a message."""
    data = make_dataset(tmp_path / "set", testsrc_video)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("IWR_UNSET_KEY_VAR", raising=False)
    code = main(["generate", "--data", str(data), "--out", str(tmp_path / "out"), "--base-url",
                 "http://127.0.0.1:9/v1", "--model", "m", "--allow-plain-http", *argv])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err


def test_the_command_has_no_option_that_takes_the_key_itself(capsys):
    """No --api-key option (not even as an abbreviation), and a key given as a variable name is not echoed."""
    with pytest.raises(SystemExit):
        main(["generate", "--data", "d", "--out", "o", "--base-url", "http://h/v1", "--model", "m",
              "--api-key", API_KEY])
    capsys.readouterr()  # argparse echoes unknown arguments; the key was on the command line already
    code = main(["generate", "--data", "d", "--out", "o", "--base-url", "http://h/v1", "--model", "m",
                 "--api-key-env", API_KEY.replace("-", " ")])
    err = capsys.readouterr().err
    assert code == 2 and "takes the NAME of an environment variable" in err
    assert API_KEY.replace("-", " ") not in err
