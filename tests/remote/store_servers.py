"""Object stores on 127.0.0.1 for the tests of cntkio.remote (and bench/remote_throughput.py).

``MotoS3``: moto's standalone S3 server (``python -m moto.server``, as s3fs's own tests run it) in a
process of its own, optionally with authentication enforced (an IAM user made through moto's IAM
before enforcement begins: a wrong secret is then refused as a real S3 refuses it); it can be
stopped and started again on the same port. ``RangeHTTPServer``: a folder served over HTTP with
``Range``, ``ETag`` and ``If-Match`` (412 when the file changed), in a thread.
Every wait here is bounded in count and time.
"""
from __future__ import annotations

import email.utils
import hashlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen | None = None, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server listening on 127.0.0.1:{port} after {seconds} s")


class MotoS3:
    """moto's S3 server in a subprocess on 127.0.0.1 (module docstring)."""

    def __init__(self, auth: bool = False) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.auth = auth
        self.proc: subprocess.Popen | None = None
        self.key, self.secret = "testing", "testing"

    def start(self) -> "MotoS3":
        env = dict(os.environ)
        if self.auth:   # the IAM setup below is the 4 requests served without authentication
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                                      str(self.port)], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        _wait_listening(self.port, self.proc)
        if self.auth:
            import boto3
            iam = boto3.client("iam", endpoint_url=self.endpoint, region_name="us-east-1",
                               aws_access_key_id="setup", aws_secret_access_key="setup")
            iam.create_user(UserName="cntkio")
            policy = iam.create_policy(PolicyName="s3", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
            iam.attach_user_policy(UserName="cntkio", PolicyArn=policy["Policy"]["Arn"])
            key = iam.create_access_key(UserName="cntkio")["AccessKey"]
            self.key, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def storage_options(self, secret: str | None = None, **extra) -> dict:
        """s3fs's options for this server (``secret``: another secret, to be refused)."""
        return {"key": self.key, "secret": self.secret if secret is None else secret,
                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"}, **extra}

    def fs(self):
        import s3fs
        return s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options())

    def make_bucket(self, name: str) -> None:
        self.fs().call_s3("create_bucket", Bucket=name)

    def upload(self, local: str, url: str) -> None:
        """Copy a file (one PUT, streamed: moto's multipart completion of a GB-sized object can fail
        under load) or a folder to ``s3://bucket/key``."""
        if os.path.isdir(local):
            self.fs().put(local, url, recursive=True)
            return
        import boto3
        bucket, _, key = url.removeprefix("s3://").partition("/")
        client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                              aws_access_key_id=self.key, aws_secret_access_key=self.secret)
        with open(local, "rb") as f:
            client.put_object(Bucket=bucket, Key=key, Body=f)


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    root = "."
    #: the next this many ranged GETs are answered 503 (a store shedding load); set by the tests
    fail_next = [0]

    def log_message(self, *args) -> None:   # quiet
        pass

    def _target(self):
        path = os.path.join(self.root, self.path.split("?", 1)[0].lstrip("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return None
        with open(path, "rb") as f:
            data = f.read()
        return data, '"' + hashlib.md5(data).hexdigest() + '"', os.stat(path).st_mtime

    def do_HEAD(self) -> None:  # noqa: N802 - the http.server name
        got = self._target()
        if got is None:
            return
        data, etag, mtime = got
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(mtime, usegmt=True))
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        got = self._target()
        if got is None:
            return
        data, etag, _ = got
        match = self.headers.get("If-Match")
        if match and match != etag:
            self.send_error(412)
            return
        rng = self.headers.get("Range")
        if rng and self.fail_next[0] > 0:
            self.fail_next[0] -= 1
            self.send_error(503, "Slow Down")
            return
        status, body = 200, data
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            a = int(a)
            b = min(int(b) if b else len(data) - 1, len(data) - 1)
            status, body = 206, data[a:b + 1]
            self.send_response(status)
            self.send_header("Content-Range", f"bytes {a}-{b}/{len(data)}")
        else:
            self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.end_headers()
        self.wfile.write(body)


class RangeHTTPServer:
    """``root`` served on 127.0.0.1 with Range, ETag and If-Match, on a thread."""

    def __init__(self, root: str) -> None:
        self.fail_next = [0]
        handler = type("Handler", (_RangeHandler,), {"root": root, "fail_next": self.fail_next})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "RangeHTTPServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
