// Runs a CloudFront Function's handler over events, the way tests/test_edge_function.py
// asks: stdin is {"source": <function code>, "events": [<event>, ...]}, stdout the
// handler's return value for each event. The code runs in a fresh vm context with no
// Node globals (no require, process, module, Buffer, timers), as CloudFront Functions
// have none: a function that leans on one fails here.
'use strict';
const vm = require('vm');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
    const { source, events } = JSON.parse(input);
    const context = vm.createContext({});
    vm.runInContext(source, context, { filename: 'function.js' });
    if (typeof context.handler !== 'function') {
        throw new Error('the function source declares no top-level handler(event)');
    }
    const results = events.map((event) => context.handler(JSON.parse(JSON.stringify(event))));
    process.stdout.write(JSON.stringify(results));
});
