"""What the tests' Python scripts share, in one module:
  - the protobuf wire format (the CI image has no python3-protobuf): varints, fields, and
    delimited streams (varint length, message) as /metrics serves them; scripts that decode
    against the schema hand the messages to protoc, this module knows no schema;
  - serve_metrics: a /metrics server on 127.0.0.1 that prints its port, for scripted scrapes;
  - parse_text: the samples of a text exposition, failing loudly (DuplicateSeries) on a series
    served twice (same name and label set), which Prometheus rejects the whole scrape for.

Import it from any script under tests/ with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
"""
import http.server
import re

PROTOBUF_TYPE = ("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                 "encoding=delimited")
TEXT_TYPE = "text/plain; version=0.0.4"


def read_varint(buf, i):
    """(value, index after it) of the varint at buf[i]; ValueError if it is cut short."""
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint at byte %d" % i)
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return value, i
        shift += 7


def encode_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def zigzag(n):
    """sint64's encoding of n."""
    return (n << 1) ^ (n >> 63)


def field(num, wire, payload):
    """One field: its key, then the payload (length-prefixed for wire type 2)."""
    key = encode_varint(num << 3 | wire)
    if wire == 2:
        return key + encode_varint(len(payload)) + payload
    return key + payload


def fields(buf):
    """(field number, wire type, value) of one message; value is bytes for length-delimited."""
    i = 0
    while i < len(buf):
        tag, i = read_varint(buf, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        if i > len(buf):
            raise ValueError("field %d runs past the message" % num)
        yield num, wt, v


def delimited(body):
    """The messages of a delimited stream, in order; ValueError naming the message (from 0) whose
    length runs past the end."""
    i, count = 0, 0
    while i < len(body):
        n, j = read_varint(body, i)
        if j + n > len(body):
            raise ValueError("message %d: %d bytes announced, %d left" % (count, n, len(body) - j))
        yield body[j:j + n]
        i, count = j + n, count + 1


def wants_protobuf(handler):
    """Whether the request's Accept header asks for the protobuf exposition."""
    return "application/vnd.google.protobuf" in handler.headers.get("Accept", "")


def serve_metrics(respond, port=0, threaded=False, close=False, server_class=None):
    """Serves GETs with respond(handler) -> (body bytes, content type), or None for a 404, on
    127.0.0.1:port (0: a free one). Prints the port on stdout first, then serves until killed.
    close: answer with Connection: close."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            answer = respond(self)
            if answer is None:
                self.send_error(404)
                return
            body, ctype = answer
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if close:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    cls = server_class or (http.server.ThreadingHTTPServer if threaded else http.server.HTTPServer)
    srv = cls(("127.0.0.1", port), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(r"(%s)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?$" % _NAME)
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(,|$)')


class DuplicateSeries(ValueError):
    """A series (metric name and label set) that a text exposition holds more than once."""


def parse_labels(text):
    """'a="1",b="x\\"y"' -> (("a", "1"), ("b", 'x"y')), in the order served; ValueError if odd."""
    labels, i = [], 0
    while i < len(text):
        m = _LABEL.match(text, i)
        if not m or m.end() == i:
            raise ValueError("unparsable labels at %r" % text[i:i + 40])
        value = re.sub(r"\\(.)", lambda e: {"n": "\n"}.get(e.group(1), e.group(1)), m.group(2))
        labels.append((m.group(1), value))
        i = m.end()
    return tuple(labels)


def parse_text(text, source="<scrape>"):
    """The samples of a Prometheus text exposition as (name, labels, value) tuples, labels a
    tuple of (name, value) pairs in the order served, value a float. Raises ValueError (with
    source and line) on a line that is not a sample or comment, and DuplicateSeries on a series
    served twice: the same name and the same label set in any order."""
    samples, seen = [], {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError("%s:%d: unparsable sample line: %r" % (source, n, line[:120]))
        try:
            labels = parse_labels(m.group(2) or "")
        except ValueError as e:
            raise ValueError("%s:%d: %s" % (source, n, e)) from None
        key = (m.group(1), frozenset(labels))
        if key in seen:
            raise DuplicateSeries("%s:%d: duplicate series %s (first at line %d)" % (
                source, n, line.rsplit(" ", 1)[0][:300], seen.get(key, n)))
        seen[key] = n
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples
