// Package contexts holds Wallcrawler's browser contexts: the
// wallcrawler-contexts table and the Chrome profile archives kept in the
// blob store at <projectId>/<contextId>/profile.tar.gz.
package contexts

// Store reads and writes contexts and their archives.
type Store struct{}
