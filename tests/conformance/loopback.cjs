// Preloaded into the bridge (node --require) by tests/conformance/run.py.
//
// supergateway 4.0.0 has no option for the address it listens on: it calls
// express's app.listen(port), which binds every interface. Whoever reaches that
// port drives a tmux-mcp session on the test's tmux server, and the bridge does
// no Host/Origin check, so it must be reachable from this machine only. This
// makes every listen() that names a TCP port but no host bind 127.0.0.1.
// run.py checks afterwards (in /proc/net/tcp{,6}) that it did.
'use strict';
const net = require('net');

const LOOPBACK = '127.0.0.1';
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] !== 'string') args.splice(1, 0, LOOPBACK);
  } else if (first && typeof first === 'object' && first.port !== undefined &&
             first.path === undefined && first.host === undefined) {
    // listen({ port, ... }[, callback])
    args[0] = { ...first, host: LOOPBACK };
  }
  return listen.apply(this, args);
};
