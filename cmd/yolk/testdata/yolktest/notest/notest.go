// Package notest has no test files (a yolk test fixture).
package notest
