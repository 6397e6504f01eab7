"""Fixtures of the object-store tests: moto's S3 server for the session, one with authentication
enforced for the credential tests, a bucket per test, and the remote options of a deserializer
config pointing at it with a chunk cache in the test's own folder.

The session server does not enforce authentication: moto 5.2's server (with botocore 1.43) refuses
a correctly signed ListObjectsV2 whose query holds a '/' (a prefix or a delimiter) as
SignatureDoesNotMatch (getmoto/moto#5948), and s3fs lists with both whenever a path is missing or
a folder is uploaded. The authenticating server serves only HEAD/GET/PUT of objects."""
import pytest

from store_servers import MotoS3


@pytest.fixture(scope="session")
def s3():
    """moto's standalone S3 server on 127.0.0.1, started once for the session and stopped after."""
    pytest.importorskip("moto.server", reason="moto[server] (the test extra) is not installed: "
                        "no S3 server to test against")
    pytest.importorskip("s3fs", reason="s3fs (the s3 extra) is not installed")
    server = MotoS3().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_auth():
    """moto's S3 server with authentication enforced (an IAM user's key), for the credential tests."""
    pytest.importorskip("moto.server", reason="moto[server] (the test extra) is not installed: "
                        "no S3 server to test against")
    pytest.importorskip("s3fs", reason="s3fs (the s3 extra) is not installed")
    server = MotoS3(auth=True).start()
    yield server
    server.stop()


@pytest.fixture()
def bucket(s3, request):
    """A fresh bucket named after the test."""
    name = "t-" + "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:50].strip("-")
    s3.make_bucket(name)
    return name


@pytest.fixture()
def remote_keys(s3, tmp_path):
    """The config keys that read URLs from the test server, with a chunk cache under tmp_path."""
    return {"storageOptions": s3.storage_options(), "cacheDir": str(tmp_path / "cache")}
