// Package e2e holds the end-to-end tests of the example providers: each
// provider's main package is built, started as a child process and driven
// over real pipes by clients/service, as the Harness would drive it, and
// fed bad input by hand. It has no code of its own.
package e2e
