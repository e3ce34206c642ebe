// Copies the pinned @dagrejs/dagre browser bundle into web/vendor/ for embedding.
// The vendored file must reference no network address: the trailing source-map
// and license-pointer comments are dropped (the license text is kept beside it
// in vendor/dagre.LICENSE). Run: npm run vendor (from web/).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkgDir = join(web, 'node_modules', '@dagrejs', 'dagre');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
let src = readFileSync(join(pkgDir, 'dist', 'dagre.min.js'), 'utf8');
src = src.split('\n').filter((l) => !l.startsWith('//# sourceMappingURL') && !l.startsWith('/*! For license')).join('\n').trimEnd();
const header = `/*! @dagrejs/dagre ${pkg.version} (${pkg.license}); license text: vendor/dagre.LICENSE */\n`;
const out = header + src + '\n';
if (/https?:\/\//i.test(out)) throw new Error('vendored dagre still contains a URL');
if (/<\/script/i.test(out)) throw new Error('vendored dagre contains </script');
writeFileSync(join(web, 'vendor', 'dagre.min.js'), out);
writeFileSync(join(web, 'vendor', 'dagre.LICENSE'), readFileSync(join(pkgDir, 'LICENSE'), 'utf8'));
console.log(`vendored @dagrejs/dagre ${pkg.version}: ${out.length} bytes`);
