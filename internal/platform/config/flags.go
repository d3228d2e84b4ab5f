package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// parseFlags parses args into fs and explains each mistake in words that
// name the flag and the form it takes, instead of stopping at the first:
// a mistaken flag is dropped and the rest parsed again, so one report
// lists them all. It returns a non-nil err only for -h (flag.ErrHelp),
// after fs printed its usage.
func parseFlags(fs *flag.FlagSet, args []string, fields []field) (mistakes []error, err error) {
	byName := map[string]field{}
	for _, f := range fields {
		byName[f.flag] = f
	}
	args, mistakes = joinBoolValues(args, byName)
	out := fs.Output()
	if !asksHelp(args) {
		// The flag package prints each error and the whole usage; the
		// explained errors are returned instead.
		fs.SetOutput(io.Discard)
		defer fs.SetOutput(out)
	}
	for range 64 {
		perr := fs.Parse(args)
		if perr == nil {
			return mistakes, nil
		}
		if errors.Is(perr, flag.ErrHelp) {
			return nil, perr
		}
		drop, n, explained := explainFlagError(fs, perr, args, byName)
		mistakes = append(mistakes, explained)
		if drop < 0 {
			return mistakes, nil
		}
		args = append(append([]string(nil), args[:drop]...), args[min(drop+n, len(args)):]...)
	}
	return mistakes, nil
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
	invalidValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for flag -(\S+): (.*)$`)
	needsArgument = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
)

// explainFlagError returns the index in args of the mistaken flag, to drop
// with its separate value (n arguments in all) before parsing again (-1:
// none), and err, an error of flag.FlagSet.Parse, rewritten.
func explainFlagError(fs *flag.FlagSet, err error, args []string, byName map[string]field) (drop, n int, explained error) {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		hint := fmt.Sprintf(`run "%s -h" for the flags`, fs.Name())
		if near := closestFlag(fs, m[1]); near != "" {
			hint = "did you mean --" + near + "?"
		}
		i := flagIndex(args, m[1])
		return i, withValue(args, i), fmt.Errorf("%s; %s", msg, hint)
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		name, value := m[2], m[1]
		// Some flag.Values store their zero on a failed Set: put the
		// default back, so the mistake is not reported twice.
		if fl := fs.Lookup(name); fl != nil {
			_ = fl.Value.Set(fl.DefValue)
		}
		i := flagIndex(args, name)
		env := ""
		if f, ok := byName[name]; ok {
			env = " (env " + EnvName(f.flag) + ")"
		}
		n := 1 // the flag package took the next argument as the value, whatever it is
		if i >= 0 && !strings.Contains(args[i], "=") && i+1 < len(args) {
			n = 2
		}
		return i, n, fmt.Errorf("config: --%s %q: want %s%s", name, value, valueForm(fs.Lookup(name), m[3]), env)
	}
	if m := needsArgument.FindStringSubmatch(msg); m != nil {
		return flagIndex(args, m[1]), 1, fmt.Errorf("config: --%s needs a value (--%s VALUE or --%s=VALUE): %s", m[1], m[1], m[1], valueForm(fs.Lookup(m[1]), ""))
	}
	return -1, 0, fmt.Errorf("config: %w", err)
}

// withValue returns how many arguments the flag at args[i] spans: 1 when
// its value is inside it (--name=value) or absent, else 2.
func withValue(args []string, i int) int {
	if i < 0 || strings.Contains(args[i], "=") || i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
		return 1
	}
	return 2
}

// valueForm describes what a flag's value must look like.
func valueForm(f *flag.Flag, why string) string {
	if f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case bool:
				return "true or false"
			case int, int64, uint, uint64:
				return "a whole number"
			case time.Duration:
				return "a duration such as 10s, 500ms or 2m"
			}
		}
		if _, ok := f.Value.(*sizeValue); ok {
			return "bytes or a size like 512MiB or 1GiB"
		}
	}
	if why != "" && why != "parse error" {
		return why
	}
	return "a value"
}

// flagIndex returns the index of the argument that sets the named flag.
func flagIndex(args []string, name string) int {
	for i, a := range args {
		if a == "--" {
			break
		}
		n := strings.TrimLeft(a, "-")
		if n == a {
			continue
		}
		n, _, _ = strings.Cut(n, "=")
		if n == name {
			return i
		}
	}
	return -1
}

// joinBoolValues finds a true/false flag followed by a separate true or
// false ("--ddb-sync false"), which Go's flag parsing would take as the
// end of the flags, silently ignoring everything after it. It joins the
// two (so the rest is still read and checked) and reports the mistake.
func joinBoolValues(args []string, byName map[string]field) ([]string, []error) {
	var errs []error
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		if f, ok := byName[name]; ok && name != a && f.boolean != nil && i+1 < len(args) {
			switch v := strings.ToLower(args[i+1]); v {
			case "true", "false", "yes", "no", "on", "off", "1", "0":
				errs = append(errs, fmt.Errorf("config: --%s %s: a true/false flag takes its value after \"=\": write --%s=%s (as two words, %q would end the flags and the rest would not be read)", name, args[i+1], name, args[i+1], args[i+1]))
				out = append(out, "--"+name+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out, errs
}

// asksHelp reports whether args ask for the usage.
func asksHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		switch a {
		case "-h", "--h", "-help", "--help":
			return true
		}
	}
	return false
}

// closestFlag returns the defined flag nearest to name, or "" when none is
// near enough to be a likely typo.
func closestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return closest(strings.ToLower(name), names)
}

// closest returns the candidate nearest to name (edit distance; a prefix
// either way counts as 1, and among equals the smaller edit distance
// wins), or "" when none is near enough to be a likely typo.
func closest(name string, candidates []string) string {
	best, bestDist, bestEdit := "", 0, 0
	for _, c := range candidates {
		edit := editDistance(name, c)
		d := edit
		if strings.HasPrefix(c, name) || strings.HasPrefix(name, c) {
			d = min(d, 1)
		}
		if best == "" || d < bestDist || (d == bestDist && edit < bestEdit) {
			best, bestDist, bestEdit = c, d, edit
		}
	}
	if best == "" || bestDist > max(2, len(name)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// creatableDir reports why dir cannot serve as a directory quarry creates
// or writes: a file in its place or above it, or a nearest existing parent
// that this process may not write.
func creatableDir(dir string) error {
	p := filepath.Clean(dir)
	for {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				if p == filepath.Clean(dir) {
					return errors.New("it is a file, not a directory")
				}
				return fmt.Errorf("%s is a file, not a directory", p)
			}
			if p == filepath.Clean(dir) {
				return nil // exists; its permissions are checked when opened
			}
			if err := syscall.Access(p, 0x2|0x1); err != nil { // W_OK|X_OK
				return fmt.Errorf("cannot create it: mkdir in %s: %v", p, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("cannot create it: %v", err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}
