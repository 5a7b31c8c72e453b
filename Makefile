.PHONY: serve test race console build

# The README's first command: the server with its console, on an SQLite file
# in the working directory.
serve: console
	go run ./cmd/veena serve

# The README's second command: every test, the console's browser test included.
test: console
	go vet ./...
	go test -timeout 40m ./...

# Every test again under the race detector (CI runs it after test): the
# engine runs commands on many goroutines, and a data race is a bug even
# where no test fails without the detector. One package at a time: the
# detector slows code tenfold, and packages run side by side on two cores
# would stretch the tests that check time limits further still.
race: console
	go test -race -p 1 -timeout 60m ./...

# A binary with the console embedded, in ./bin/veena.
build: console
	go build -o bin/veena ./cmd/veena

# The web console's browser libraries: fetched from the npm registry (pinned
# by console/package-lock.json) and copied into console/web/vendor, which the
# binary embeds. Skipped when they are already there and up to date.
console: console/web/vendor/manifest.json

console/web/vendor/manifest.json: console/package-lock.json console/build.mjs
	npm ci --prefix console --no-audit --no-fund
	node console/build.mjs
