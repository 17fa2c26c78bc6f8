#!/usr/bin/env node
// Starts @20minutes/s3rver (its package has no bin/) with its CLI flags.
// Patch: s3rver escapes XML text itself and fast-xml-parser 5 escapes it again (a key "a&b" is
// listed as "a&amp;amp;b"); skip the second pass where s3rver already escaped.
const fxp = require(require.resolve('fast-xml-parser', {
  paths: [require.resolve('@20minutes/s3rver')],
}));
const proto = fxp.XMLBuilder.prototype;
const defaultTVP = new fxp.XMLBuilder({}).options.tagValueProcessor;
const build = proto.build;
proto.build = function (obj) {
  if (this.options.tagValueProcessor !== defaultTVP) this.options.processEntities = false;
  return build.call(this, obj);
};
require('@20minutes/s3rver/lib/cli')
  .parseAsync(process.argv)
  .catch((err) => { console.error(err); process.exit(1); });
