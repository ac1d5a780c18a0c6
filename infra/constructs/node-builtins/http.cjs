// node:http for the functions' ESM bundles, as a CommonJS module: see ../bundling.ts.
module.exports = process.getBuiltinModule('node:http');
