// CloudFront Function (runtime cloudfront-js-2.0), viewer request, on the behaviours for
// document and FAQ JSON URLs (infra/site.py). When the viewer's Accept names
// text/markdown and weighs it at least as high as JSON, the request's URI becomes the
// Markdown twin's: CloudFront runs a viewer-request function before it looks in its
// cache, so the cache key is the rewritten URI and the negotiated answer shares the
// `.md` URL's cache entry (no Accept in the cache key, no fragmentation).
// The same decision as agent_edge/edge.py `prefers_markdown` and agent_contract/paths.py
// `markdown_twin`; tests/test_edge_function.py runs both over the same cases.
// Plain ES5 on purpose: no module syntax, no Node globals (the runtime has neither).

var TWIN_PREFIXES = ['/api/v1/content/', '/api/v1/faq/'];
var NOT_ENTRIES = ['index', 'search-index'];
var MARKDOWN = 'text/markdown';
var JSON_MEDIA = 'application/json';
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
    var markdown = weight(found, MARKDOWN, 0);
    var json = weight(found, JSON_MEDIA, weight(found, 'application/*', weight(found, '*/*', 0)));
    return markdown > 0 && markdown >= json;
}

function markdownTwin(uri) {
    for (var i = 0; i < TWIN_PREFIXES.length; i++) {
        var prefix = TWIN_PREFIXES[i];
        if (uri.indexOf(prefix) === 0 && uri.slice(-5) === '.json') {
            var id = uri.slice(prefix.length, -5);
            if (id && id.indexOf('/') < 0 && NOT_ENTRIES.indexOf(id) < 0) {
                return uri.slice(0, -5) + '.md';
            }
        }
    }
    return null;
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

function handler(event) {
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
