// Package rrweb holds rrweb (npm package rrweb 2.2.2, MIT licence, the
// licence in LICENSE beside it), vendored unchanged: rrweb.min.js is the
// package's dist/rrweb.umd.min.cjs (its recorder and its Replayer, under
// the global name rrweb), rrweb.min.css its dist/style.min.css. Wallcrawler
// injects the recorder into its sessions' pages; the console serves both
// files to play the recordings back.
package rrweb

import "embed"

// Version is the vendored rrweb's npm version.
const Version = "2.2.2"

// Script is rrweb.min.js.
//
//go:embed rrweb.min.js
var Script []byte

// FS holds rrweb.min.js, rrweb.min.css and LICENSE.
//
//go:embed rrweb.min.js rrweb.min.css LICENSE
var FS embed.FS
