#!/usr/bin/env python3
"""moto's S3 server (PyPI `moto[server]`) with atomic conditional writes.

S3 guarantees that a `PUT` with `If-None-Match: *` either creates the object or fails
with 412 when it exists, atomically: lance commits a dataset version that way, and two
writers racing for one version must not both win. moto 5.2.5 checks the condition and
then writes, two steps, on a threaded server, so under contention both writers could
pass the check. This launcher runs the unchanged moto server with object writes
(`PutObject`, multipart completion) serialised by one lock, so the check and the write
are one step as on S3 and a lost write in a test is never the test server's; everything
else stays concurrent.

    python scripts/moto_s3_server.py -H 127.0.0.1 -p 5000   (moto_server's own flags)
"""
import functools
import sys
import threading

from moto.s3.responses import S3Response

_WRITE_LOCK = threading.RLock()


def _atomic(method):
    @functools.wraps(method)
    def locked(*args, **kwargs):
        with _WRITE_LOCK:
            return method(*args, **kwargs)

    return locked


# put_object: PutObject with If-None-Match / If-Match; _key_response_post:
# CompleteMultipartUpload, which honours If-None-Match too.
for _name in ("put_object", "_key_response_post"):
    setattr(S3Response, _name, _atomic(getattr(S3Response, _name)))

if __name__ == "__main__":
    from moto.server import main

    main(sys.argv[1:])
