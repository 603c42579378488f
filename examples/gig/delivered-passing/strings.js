"use strict";
exports.slugify = (s) => s.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
exports.capitalize = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);
exports.truncate = (s, n) => (s.length <= n ? s : s.slice(0, n - 3) + "...");
