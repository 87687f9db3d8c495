//! What the crate's unit tests share.

/// A JavaScript function that shows what a script can see of a value: every own property in
/// order with its attributes and value, the prototype, `-0`, an `ArrayBuffer`'s bytes. Tests
/// that build the same value two ways compare the two texts.
pub(crate) const SHOW: &str = r#"(function show(v) {
    if (v === null || typeof v !== 'object') {
        return typeof v + ':' + (Object.is(v, -0) ? '-0' : String(v));
    }
    if (v instanceof ArrayBuffer) {
        return 'ArrayBuffer[' + Array.from(new Uint8Array(v)).join(',') + ']';
    }
    var list = Array.isArray(v);
    var proto = Object.getPrototypeOf(v) === (list ? Array.prototype : Object.prototype);
    var parts = Object.getOwnPropertyNames(v).map(function (k) {
        var d = Object.getOwnPropertyDescriptor(v, k);
        return JSON.stringify(k) + (d.writable ? 'w' : '') + (d.enumerable ? 'e' : '') +
            (d.configurable ? 'c' : '') + '=' + show(d.value);
    });
    return (list ? '[' : '{') + (proto ? '' : '!proto ') + parts.join(',') + (list ? ']' : '}');
})"#;
