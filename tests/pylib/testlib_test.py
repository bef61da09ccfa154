#!/usr/bin/env python3
"""tests/pylib/testlib.py's wire format on hand-made bytes: varints both ways, fields, delimited streams and
their errors. Exit 0 when all hold."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testlib import (DuplicateSeries, delimited, encode_varint, field, fields,  # noqa: E402
                     parse_text, read_varint, zigzag)


class ProtowireTest(unittest.TestCase):
    def test_varint_round_trip(self):
        self.assertEqual(encode_varint(300), b"\xac\x02")
        for n in (0, 1, 127, 128, 300, 2**32, 2**64 - 1):
            self.assertEqual(read_varint(encode_varint(n) + b"\xff", 0), (n, len(encode_varint(n))))
        with self.assertRaisesRegex(ValueError, "truncated varint at byte 1"):
            read_varint(b"\x80", 0)

    def test_zigzag(self):
        self.assertEqual([zigzag(n) for n in (0, -1, 1, -2)], [0, 1, 2, 3])

    def test_fields(self):
        msg = field(1, 2, b"abc") + field(2, 0, encode_varint(150)) + field(3, 1, b"8 bytes!")
        self.assertEqual(list(fields(msg)), [(1, 2, b"abc"), (2, 0, 150), (3, 1, b"8 bytes!")])
        with self.assertRaisesRegex(ValueError, "field 1 runs past"):
            list(fields(field(1, 2, b"abc")[:-1]))

    def test_delimited(self):
        body = encode_varint(3) + b"one" + encode_varint(0) + encode_varint(2) + b"xy"
        self.assertEqual(list(delimited(body)), [b"one", b"", b"xy"])
        with self.assertRaisesRegex(ValueError, "message 1: 5 bytes announced, 2 left"):
            list(delimited(encode_varint(1) + b"a" + encode_varint(5) + b"xy"))


class ParseTextTest(unittest.TestCase):
    def test_samples_and_escapes(self):
        text = ('# HELP a h\n# TYPE a gauge\na{x="1\\"\\n,",y="2"} 1\nb 2.5 1700000000\n'
                'c{} +Inf\n')
        self.assertEqual(parse_text(text), [("a", (("x", '1"\n,'), ("y", "2")), 1.0),
                                            ("b", (), 2.5), ("c", (), float("inf"))])

    def test_duplicate_series_fails_loudly(self):
        with self.assertRaisesRegex(DuplicateSeries, r"scrape:3: duplicate series .*line 1"):
            parse_text('a{x="1",y="2"} 1\na{x="2",y="2"} 1\na{y="2",x="1"} 3\n', "scrape")
        with self.assertRaises(DuplicateSeries):
            parse_text("a 1\na 2\n")
        parse_text('a{x="1"} 1\nb{x="1"} 1\na{x="1",y=""} 1\n')  # other series

    def test_unparsable_line(self):
        with self.assertRaisesRegex(ValueError, r"<scrape>:1: unparsable"):
            parse_text("not a sample\n")


if __name__ == "__main__":
    unittest.main()
