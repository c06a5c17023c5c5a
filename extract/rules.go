package extract

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/perfcast/perfcast/ingest"
)

// Rule names the component (Config.Components) or the operation
// (Config.Operations) of the operations whose spans match it, where
// service.name and the span name alone would not: one service that is
// several components (its admin pages on their own pods), several services
// that are one, span names that carry values (/p/blue-shoes). Every
// condition given must hold; a rule gives at least one. Patterns are globs
// over the whole value: * matches any run of characters, ? any one.
type Rule struct {
	// Component is the name the matching operations' component gets, in a
	// component rule.
	Component string `yaml:"component"`
	// Name is the name the matching operations get, in an operation rule.
	Name string `yaml:"name"`
	// Service matches service.name.
	Service string `yaml:"service"`
	// Span matches the span's name or the operation name extraction gives
	// it (HTTP route, identifiers folded, and for a component rule the
	// operation rules applied).
	Span string `yaml:"span"`
	// Attributes match span or resource attributes by name; a span that
	// lacks one does not match, and an empty pattern asks only that it be
	// there.
	Attributes map[string]string `yaml:"attributes"`

	line int // in the configuration file, 0 when not read from one
}

// ruleKeys are the keys of a rule.
var ruleKeys = []string{"component", "name", "service", "span", "attributes"}

// UnmarshalYAML decodes a rule and keeps its line, for error messages. A
// key it does not know is an error, as the decoder's KnownFields makes it
// elsewhere (it does not reach into a type's own decoding).
func (r *Rule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		var unknown []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(ruleKeys, k.Value) {
				unknown = append(unknown, fmt.Sprintf("line %d: field %s not found in type extract.Rule", k.Line, k.Value))
			}
		}
		if len(unknown) > 0 {
			return &yaml.TypeError{Errors: unknown}
		}
	}
	type plain Rule
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = Rule(p)
	r.line = n.Line
	return nil
}

// lineError is a configuration error at a line of its file (0: unknown).
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

// checkRules reports the first rule of a list (components or operations)
// that names nothing, names the wrong thing or gives no condition.
func checkRules(list string, rules []Rule) error {
	for i, r := range rules {
		if err := checkRule(list, r); err != nil {
			return &lineError{line: r.line, msg: fmt.Sprintf("%s[%d]: %v", list, i, err)}
		}
	}
	return nil
}

func checkRule(list string, r Rule) error {
	names, other, otherKey := r.Component, r.Name, "name"
	what := "component"
	if list == "operations" {
		names, other, otherKey, what = r.Name, r.Component, "component", "operation name"
	}
	switch {
	case strings.TrimSpace(names) == "":
		return fmt.Errorf("a rule needs the %s it gives", what)
	case other != "":
		return fmt.Errorf("%s: a rule in %s gives the %s only", otherKey, list, what)
	case r.Service == "" && r.Span == "" && len(r.Attributes) == 0:
		return fmt.Errorf("a rule needs a condition: service, span or attributes")
	}
	for k := range r.Attributes {
		if k == "" {
			return fmt.Errorf("attributes: an attribute needs a name")
		}
	}
	return nil
}

// compiledRule is a rule with its patterns compiled.
type compiledRule struct {
	gives         string
	service, span *regexp.Regexp
	attrs         []string // attribute names, sorted
	values        []*regexp.Regexp
}

// glob compiles a glob pattern into an anchored regular expression; nil
// for the empty pattern, which matches anything.
func glob(pattern string) *regexp.Regexp {
	if pattern == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("(?s)^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// ruleSet holds a list of rules compiled, built on first use.
type ruleSet struct {
	once  sync.Once
	rules []compiledRule
}

func (rs *ruleSet) get(rules []Rule, gives func(Rule) string) []compiledRule {
	rs.once.Do(func() {
		for _, r := range rules {
			cr := compiledRule{gives: gives(r), service: glob(r.Service), span: glob(r.Span)}
			for _, k := range slices.Sorted(maps.Keys(r.Attributes)) {
				cr.attrs = append(cr.attrs, k)
				cr.values = append(cr.values, glob(r.Attributes[k]))
			}
			rs.rules = append(rs.rules, cr)
		}
	})
	return rs.rules
}

// match reports whether the rule matches a span whose operation extraction
// names op.
func (r *compiledRule) match(sp *ingest.Span, op string) bool {
	if r.service != nil && !r.service.MatchString(sp.Service) {
		return false
	}
	if r.span != nil && !r.span.MatchString(sp.Name) && !r.span.MatchString(op) {
		return false
	}
	for i, k := range r.attrs {
		v, ok := sp.Lookup(k)
		if !ok || r.values[i] != nil && !r.values[i].MatchString(v) {
			return false
		}
	}
	return true
}

// firstMatch is what the first rule of rules that matches gives.
func firstMatch(rules []compiledRule, sp *ingest.Span, op string) (string, bool) {
	for i := range rules {
		if rules[i].match(sp, op) {
			return rules[i].gives, true
		}
	}
	return "", false
}

// ruleComponent is the component the first matching component rule names.
func (c *Config) ruleComponent(sp *ingest.Span, op string) (string, bool) {
	if c == nil || len(c.Components) == 0 {
		return "", false
	}
	return firstMatch(c.componentRules.get(c.Components, func(r Rule) string { return r.Component }), sp, op)
}

// ruleOperation is the name the first matching operation rule gives.
func (c *Config) ruleOperation(sp *ingest.Span, op string) (string, bool) {
	if c == nil || len(c.Operations) == 0 {
		return "", false
	}
	return firstMatch(c.operationRules.get(c.Operations, func(r Rule) string { return r.Name }), sp, op)
}
