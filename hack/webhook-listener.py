#!/usr/bin/env python3
"""Print every request a webhook Channel sends: `python3 hack/webhook-listener.py [port]`.

The samples' webhook channel (config/samples/channel_webhook.yaml) posts to
http://127.0.0.1:9999; run this next to `make dev` to watch notifications arrive.
"""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def _show(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace")
        print(f"{self.command} {self.path}\n{body}\n", flush=True)
        self.send_response(200)
        self.end_headers()

    do_GET = do_POST = do_PUT = _show

    def log_message(self, *args):
        pass


port = int(sys.argv[1]) if len(sys.argv) > 1 else 9999
print(f"listening on http://127.0.0.1:{port}", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
