.PHONY: console

# The web console's browser libraries: fetched from the npm registry (pinned
# by console/package-lock.json) and copied into console/web/vendor, which the
# binary embeds. Run it before `go build` for a binary with the console.
console:
	npm ci --prefix console --no-audit --no-fund
	node console/build.mjs
