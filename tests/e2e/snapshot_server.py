#!/usr/bin/env python3
"""Serves /metrics for `top` tests: the first request gets SNAPSHOT1, every later one SNAPSHOT2
(.gz files are decompressed). Prints the port it listens on, then serves until killed.
   snapshot_server.py SNAPSHOT1 SNAPSHOT2"""
import gzip
import http.server
import sys


def load(path):
    data = open(path, 'rb').read()
    return gzip.decompress(data) if path.endswith('.gz') else data


SNAPS = [load(sys.argv[1]), load(sys.argv[2])]
served = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def do_GET(self):
        global served
        body = SNAPS[min(served, 1)]
        served += 1
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain; version=0.0.4')
        self.send_header('Content-Length', str(len(body)))
        self.send_header('Connection', 'close')
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
