// Package release names the version this build reports.
package release

// Version is the release this build reports; it must be the newest entry
// of CHANGELOG.md.
const Version = "2.13.0-rc.4"

// UserAgent is the User-Agent header the client sends.
func UserAgent() string { return "release-client/" + Version }
