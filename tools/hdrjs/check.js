#!/usr/bin/env node
// check.js reads every HdrHistogram interval log (*.hlog) in a directory
// with hdr-histogram-js, a reader that shares no code with the Go writer
// (results.WriteHlog), and prints as JSON each file's total count per tag:
//
//	{"<file>.hlog": {"NO TAG": 6000, "whole-run": 0}, ...}
//
// Untagged intervals count under "NO TAG", the library's name for them.
// The library's reader skips a line it cannot parse, so check.js counts
// the interval lines itself and fails (exit 1) when the reader returned
// fewer histograms than there are lines.
//
// Usage: node check.js DIR
"use strict";

const fs = require("fs");
const path = require("path");
const { HistogramLogReader } = require("hdr-histogram-js");

// intervalLines counts the lines of an interval log that hold a histogram:
// neither a comment nor the legend, and with fields.
function intervalLines(content) {
  return content
    .split(/\r\n|\r|\n/)
    .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith('"') && l.includes(","))
    .length;
}

// countsByTag reads one log and sums its intervals' total counts per tag.
function countsByTag(file) {
  const content = fs.readFileSync(file, "utf8");
  const reader = new HistogramLogReader(content);
  const counts = {};
  let read = 0;
  for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) {
    counts[h.tag] = (counts[h.tag] || 0) + h.totalCount;
    read++;
  }
  const want = intervalLines(content);
  if (read !== want) {
    throw new Error(`${file}: read ${read} interval histograms; the log has ${want} interval lines`);
  }
  return counts;
}

function main(argv) {
  if (argv.length !== 1) {
    process.stderr.write("usage: node check.js DIR (a directory of .hlog files)\n");
    process.exit(2);
  }
  const dir = argv[0];
  const names = fs.readdirSync(dir).filter((n) => n.endsWith(".hlog")).sort();
  if (names.length === 0) {
    throw new Error(`${dir}: no .hlog files`);
  }
  const out = {};
  for (const n of names) {
    out[n] = countsByTag(path.join(dir, n));
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

try {
  main(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`check.js: ${e.message}\n`);
  process.exit(1);
}
