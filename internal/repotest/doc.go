// Package repotest holds tests of the repository as a whole: every Go
// snippet of the README and docs/ compiles, imports run one way between the
// layers, and every command answers -h. It has no code of its own.
package repotest
