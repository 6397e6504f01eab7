"""Faults of an object store: the server stopped mid-sweep (retries logged, then an error naming the
URL and the byte range; the checkpoint taken before resumes exactly once the server is back), an
object replaced during a run (an error naming it, never mixed data), a wrong credential (the back
end's message with the URL). Every wait is bounded: one retry of 50 ms, botocore's own retries off,
1 s connect timeouts."""
from __future__ import annotations

import logging

import pytest

from store_servers import MotoS3, RangeHTTPServer
from test_remote_formats import assert_same, ctf_source, minibatches, write_ctf

from cntkio.errors import RemoteError
from cntkio.remote import ObjectChanged, RemoteDenied


def _quick(server, cache_dir, **extra):
    """Remote keys that give up fast: no chunk cache (every chunk is a GET), one retry."""
    so = server.storage_options(**extra)
    so.update(config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 1,
                                        "read_timeout": 5})
    return {"storageOptions": so, "cacheDir": str(cache_dir), "cacheLimit": 0, "remoteRetries": 1,
            "remoteRetryDelay": 0.05}


def test_a_server_stopped_mid_sweep_fails_naming_the_url_and_the_checkpoint_resumes_once_it_is_back(
        tmp_path, caplog):
    pytest.importorskip("moto.server", reason="moto[server] (the test extra) is not installed")
    server = MotoS3().start()
    try:
        server.make_bucket("data")
        local = write_ctf(tmp_path / "a.ctf", n=800, seed=4)
        url = "s3://data/a.ctf"
        server.upload(local, url)
        keys = _quick(server, tmp_path / "cache")
        want = minibatches(ctf_source(local, max_sweeps=1))
        src = ctf_source(url, keys, max_sweeps=1)
        head = minibatches(src, count=3)
        state = src.get_checkpoint_state()
        server.stop()
        with caplog.at_level(logging.WARNING, logger="cntkio.remote"), pytest.raises(RemoteError) as err:
            minibatches(src, count=len(want))
        assert url in str(err.value) and "bytes " in str(err.value)
        assert err.value.begin is not None and err.value.end > err.value.begin
        assert any("retry 1 of 1" in r.getMessage() for r in caplog.records)
        server.start()                      # the store is back (moto starts empty: the same bytes again)
        server.make_bucket("data")
        server.upload(local, url)
        again = ctf_source(url, keys, max_sweeps=1)
        again.restore_from_checkpoint(state)
        assert_same(head + minibatches(again), want)
    finally:
        server.stop()


def test_an_object_replaced_during_a_run_is_an_error_naming_it(s3, bucket, tmp_path):
    local = write_ctf(tmp_path / "a.ctf", n=800, seed=5)
    url = f"s3://{bucket}/a.ctf"
    s3.upload(local, url)
    src = ctf_source(url, _quick(s3, tmp_path / "cache"), max_sweeps=1)
    minibatches(src, count=2)
    write_ctf(tmp_path / "b.ctf", n=800, seed=6)
    s3.upload(str(tmp_path / "b.ctf"), url)
    with pytest.raises(ObjectChanged) as err:
        minibatches(src)
    assert url in str(err.value) and "changed" in str(err.value)
    # a source built afterwards reads the new version
    assert_same(minibatches(ctf_source(url, _quick(s3, tmp_path / "cache"), max_sweeps=1)),
                minibatches(ctf_source(str(tmp_path / "b.ctf"), max_sweeps=1)))


def test_a_wrong_credential_gives_the_back_ends_message_with_the_url(s3_auth, tmp_path):
    local = write_ctf(tmp_path / "a.ctf", n=20)
    s3_auth.make_bucket("creds")
    url = "s3://creds/a.ctf"
    s3_auth.upload(local, url)
    right = _quick(s3_auth, tmp_path / "cache", skip_instance_cache=True)
    assert len(minibatches(ctf_source(url, right, max_sweeps=1))) > 0     # the right secret reads it
    keys = _quick(s3_auth, tmp_path / "cache", secret="not-the-secret", skip_instance_cache=True)
    with pytest.raises(RemoteDenied) as err:
        ctf_source(url, keys, max_sweeps=1)
    assert str(err.value).startswith(url + ": PermissionError:")
    assert "Forbidden" in str(err.value) or "signature" in str(err.value)


def test_a_503_is_retried_with_a_logged_backoff_and_past_the_retries_names_url_and_range(tmp_path, caplog):
    pytest.importorskip("aiohttp", reason="aiohttp (the http extra) is not installed")
    from cntkio.remote import forget, open_object, remote_options
    served = tmp_path / "www"
    served.mkdir()
    (served / "a.bin").write_bytes(bytes(range(256)) * 64)
    keys = {"cacheDir": str(tmp_path / "cache"), "cacheLimit": 0, "remoteRetries": 2, "remoteRetryDelay": 0.01}
    with RangeHTTPServer(str(served)) as http:
        url = f"{http.url}/a.bin"
        obj = open_object(url, remote_options(keys))
        http.fail_next[0] = 2                        # two 503s, then the answer
        with caplog.at_level(logging.WARNING, logger="cntkio.remote"):
            assert bytes(obj.read(100, 300)) == (bytes(range(256)) * 64)[100:300]
        retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
        assert len(retries) == 2 and "503" in retries[0] and "retry 1 of 2 in 0.01 s" in retries[0]
        assert "retry 2 of 2 in 0.02 s" in retries[1]              # the delay doubles
        http.fail_next[0] = 3                        # more than the retries
        with pytest.raises(RemoteError) as err:
            obj.read(1000, 1200)
        assert str(err.value).startswith(f"{url} bytes 1000-1200: ") and "(after 3 attempts)" in str(err.value)
        forget(url)
