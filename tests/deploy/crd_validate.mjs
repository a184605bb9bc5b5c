// Validates custom resources against their CRDs' schemas, offline: the validators the npm packages
// of kubernetes-models compile from cert-manager's and Gateway API's CRDs (installed by
// deploy/install-tools.sh under .tools/crd-schemas). Reads a JSON list of manifests on stdin and
// prints a JSON list of {name, problem}; a kind with no schema there is a problem too.
//   node tests/deploy/crd_validate.mjs <node_modules dir> < manifests.json
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const PACKAGES = {
  "cert-manager.io": "@kubernetes-models/cert-manager",
  "gateway.networking.k8s.io": "@kubernetes-models/gateway-api",
};

const modules = process.argv[2];
const docs = JSON.parse(readFileSync(0, "utf8"));
const problems = [];
for (const doc of docs) {
  const name = `${doc.kind}/${doc.metadata?.name}`;
  const [group, version] = doc.apiVersion.split("/");
  const pkg = PACKAGES[group];
  if (!pkg) {
    problems.push({ name, problem: `no schema for API group ${group}` });
    continue;
  }
  const file = join(modules, pkg, group, version, `${doc.kind}.js`);
  let model;
  try {
    model = (await import(pathToFileURL(file).href))[doc.kind];
  } catch (error) {
    problems.push({ name, problem: `no schema for ${doc.apiVersion} ${doc.kind}: ${error.message}` });
    continue;
  }
  try {
    new model(doc).validate();
  } catch (error) {
    problems.push({ name, problem: error.message });
  }
}
process.stdout.write(JSON.stringify(problems));
