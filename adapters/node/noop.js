#!/usr/bin/env node
'use strict';
// Grants every acquire at once: measures what the protocol itself costs.
const { run } = require('./protocol');

const hello = {
  hello: 'lockbench-adapter', protocol: 1, name: 'node-noop',
  library: 'none', library_version: '0', backend: 'none', nodes: 0, lease: 'ttl',
  capabilities: { token: true, extend: false, blocking: false },
};

run(hello, () => {
  let counter = 0;
  return {
    acquire: async (req) => {
      counter += 1;
      return { handle: counter, token: counter, waited: false, valid_ms: req.ttl_ms };
    },
    release: async () => {},
    classify: () => 'error',
  };
});
