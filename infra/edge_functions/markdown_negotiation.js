// CloudFront Function (runtime cloudfront-js-2.0) on the behaviours for document and FAQ
// URLs (infra/site.py), published twice from this one source: at viewer request and at
// viewer response (one function per event type and behaviour; the handler tells them
// apart by `event.response`, which only a viewer-response event has).
//
// Viewer request, on the JSON behaviours: when the viewer's Accept names text/markdown
// and weighs it at least as high as JSON, the request's URI becomes the Markdown twin's:
// CloudFront runs a viewer-request function before it looks in its cache, so the cache
// key is the rewritten URI and the negotiated answer shares the `.md` URL's cache entry.
//
// Viewer response, on the JSON and the Markdown behaviours (issue 26): the answer names
// its other representation by appending `<twin>; rel="alternate"; type=...` to the Link
// the response headers policy put there (the policy's headers are in the event: CloudFront
// inserts them before the viewer-response function runs), and a Markdown answer's token
// estimate moves from S3's user metadata header to X-Markdown-Tokens.
//
// The same decisions as agent_edge/edge.py and agent_contract/directives.py; the table
// below is written in by infra/site.py from agent_contract (directives.edge_function_table),
// and tests/test_edge_function.py runs this code, so substituted, over the local edge's cases.
// Plain ES5 on purpose: no module syntax, no Node globals (the runtime has neither).

var TABLE = __AGENT_CONTRACT__;
// RFC 9110 12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
var QVALUE = /^(0(\.[0-9]{0,3})?|1(\.0{0,3})?)$/;

function weights(accept) {
    var found = {};
    var items = accept.split(',');
    for (var i = 0; i < items.length; i++) {
        var parts = items[i].split(';');
        var range = parts[0].trim().toLowerCase();
        if (!range) {
            continue;
        }
        var q = 1;
        for (var j = 1; j < parts.length; j++) {
            var param = parts[j].trim();
            var eq = param.indexOf('=');
            var name = (eq < 0 ? param : param.slice(0, eq)).trim().toLowerCase();
            if (name === 'q') {
                var value = eq < 0 ? '' : param.slice(eq + 1).trim();
                q = QVALUE.test(value) ? parseFloat(value) : 0;
            }
        }
        found[range] = q;
    }
    return found;
}

function weight(found, range, fallback) {
    return Object.prototype.hasOwnProperty.call(found, range) ? found[range] : fallback;
}

function prefersMarkdown(accept) {
    if (!accept) {
        return false;
    }
    var found = weights(accept);
    var markdown = weight(found, TABLE.markdown, 0);
    var json = weight(found, TABLE.json, weight(found, 'application/*', weight(found, '*/*', 0)));
    return markdown > 0 && markdown >= json;
}

function markdownTwin(uri) {
    for (var i = 0; i < TABLE.twinPrefixes.length; i++) {
        var prefix = TABLE.twinPrefixes[i];
        if (uri.indexOf(prefix) === 0 && uri.slice(-5) === '.json') {
            var id = uri.slice(prefix.length, -5);
            if (id && id.indexOf('/') < 0 && TABLE.notEntries.indexOf(id) < 0) {
                return uri.slice(0, -5) + '.md';
            }
        }
    }
    return null;
}

// The JSON path of a Markdown twin's path, or null.
function jsonTwin(uri) {
    if (uri.slice(-3) !== '.md') {
        return null;
    }
    var candidate = uri.slice(0, -3) + '.json';
    return markdownTwin(candidate) === uri ? candidate : null;
}

function acceptOf(headers) {
    var accept = headers && headers.accept;
    if (!accept) {
        return '';
    }
    // Repeated Accept headers arrive as multiValue; RFC 9110 5.3 joins them with commas.
    if (accept.multiValue && accept.multiValue.length) {
        return accept.multiValue.map(function (v) { return v.value; }).join(',');
    }
    return accept.value || '';
}

function respond(event) {
    var request = event.request;
    var response = event.response;
    var headers = response.headers;
    // Whether the request rewritten at viewer request shows here as the `.md` URI or as
    // the viewer's own, the answer is the same: a `.md` URI is the Markdown; a JSON
    // entry URI is the Markdown exactly when the viewer-request half chose it.
    var jsonUri = jsonTwin(request.uri);
    var markdown = jsonUri !== null;
    if (!markdown && markdownTwin(request.uri)) {
        jsonUri = request.uri;
        markdown = prefersMarkdown(acceptOf(request.headers));
    }
    if (jsonUri !== null && response.statusCode < TABLE.alternateBelow) {
        var alternate = markdown
            ? '<' + jsonUri + '>; rel="alternate"; type="' + TABLE.json + '"'
            : '<' + markdownTwin(jsonUri) + '>; rel="alternate"; type="' + TABLE.markdown + '"';
        var link = headers.link && headers.link.value;
        headers.link = { value: link ? link + ', ' + alternate : alternate };
    }
    var tokens = headers[TABLE.tokensMetadata];
    if (tokens) {
        if (markdown && response.statusCode === 200) {
            headers[TABLE.tokensHeader] = { value: tokens.value };
        }
        delete headers[TABLE.tokensMetadata];
    }
    return response;
}

function handler(event) {
    if (event.response) {
        return respond(event);
    }
    var request = event.request;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
        return request;
    }
    var twin = markdownTwin(request.uri);
    if (twin && prefersMarkdown(acceptOf(request.headers))) {
        request.uri = twin;
    }
    return request;
}
