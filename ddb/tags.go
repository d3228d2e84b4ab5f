package ddb

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Tags of tables: TagResource, UntagResource and ListTagsOfResource, by
// table ARN. A table's tags live in its metadata (tableMeta.Tags), in the
// order their keys were first set; CreateTable's Tags land there too.

const (
	maxTags        = 50
	maxTagKeyLen   = 128
	maxTagValueLen = 256
)

// tableArnPattern matches a table ARN: region, account, table name.
var tableArnPattern = regexp.MustCompile(`^arn:aws[a-zA-Z-]*:dynamodb:([^:/]+):([^:/]+):table/([^/]+)$`)

// tagPattern is what a tag key or value may contain: letters, digits,
// white space and + - = . _ : / @.
var tagPattern = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)

// TagResourceInput is the request of TagResource.
type TagResourceInput struct {
	ResourceArn *string `json:"ResourceArn"`
	Tags        []Tag   `json:"Tags"`
}

// UntagResourceInput is the request of UntagResource.
type UntagResourceInput struct {
	ResourceArn *string  `json:"ResourceArn"`
	TagKeys     []string `json:"TagKeys"`
}

// ListTagsOfResourceInput is the request of ListTagsOfResource.
type ListTagsOfResourceInput struct {
	ResourceArn *string `json:"ResourceArn"`
	NextToken   *string `json:"NextToken"`
}

// ListTagsOfResourceOutput is the response of ListTagsOfResource. A table
// has at most 50 tags, so they always fit in one page.
type ListTagsOfResourceOutput struct {
	Tags      []Tag   `json:"Tags"`
	NextToken *string `json:"NextToken,omitempty"`
}

// TagResourceOutput is the (empty) response of TagResource and
// UntagResource: on the wire, a response with no body.
type TagResourceOutput struct{}

// emptyOutput is an operation output answered with an empty body.
type emptyOutput interface{ emptyBody() }

func (*TagResourceOutput) emptyBody() {}

// arnTableName returns the name of the table a ResourceArn names, checking
// the ARN's form; ok is false when the ARN is of another region or account.
func (s *Store) arnTableName(arn *string) (name string, ok bool, err *Error) {
	if arn == nil {
		return "", false, validationf("Invalid TableArn")
	}
	m := tableArnPattern.FindStringSubmatch(*arn)
	if m == nil {
		return "", false, validationf("Invalid TableArn: Invalid ResourceArn provided as input %s", *arn)
	}
	var c constraintErrors
	checkName(&c, "tableName", m[3])
	if c.err() != nil {
		return "", false, validationf("Invalid TableArn: Invalid ResourceArn provided as input %s", *arn)
	}
	return m[3], m[1] == s.opts.Region && m[2] == s.opts.AccountID, nil
}

// arnTable returns the table a ResourceArn names.
func (s *Store) arnTable(arn *string) (*table, *Error) {
	name, ok, err := s.arnTableName(arn)
	if err != nil {
		return nil, err
	}
	if ok {
		if t, _ := s.table(name); t != nil {
			return t, nil
		}
	}
	return nil, notFound("Requested resource not found: ResourcArn: %s not found", *arn)
}

// checkTagLengths records the length constraint errors of one tag key (and
// value, when value is non-nil).
func checkTagLengths(c *constraintErrors, field, key string, value *string) {
	keyField, valueField := field+".key", field+".value"
	if value == nil {
		keyField = field
	}
	if n := utf8.RuneCountInString(key); n < 1 {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", key, keyField)
	} else if n > maxTagKeyLen {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", key, keyField, maxTagKeyLen)
	}
	if value != nil && utf8.RuneCountInString(*value) > maxTagValueLen {
		c.add("Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", *value, valueField, maxTagValueLen)
	}
}

// checkTagList records the constraint errors of a request's Tags: a
// missing Key or Value, and the lengths of both.
func checkTagList(c *constraintErrors, tags []Tag) {
	for i, tg := range tags {
		field := fmt.Sprintf("tags.%d.member", i+1)
		if tg.keyNull {
			c.add("Value null at '%s.key' failed to satisfy constraint: Member must not be null", field)
		}
		if tg.valueNull {
			c.add("Value null at '%s.value' failed to satisfy constraint: Member must not be null", field)
		}
		if tg.keyNull {
			if v := tg.Value; !tg.valueNull && utf8.RuneCountInString(v) > maxTagValueLen {
				c.add("Value '%s' at '%s.value' failed to satisfy constraint: Member must have length less than or equal to %d", v, field, maxTagValueLen)
			}
			continue
		}
		v := tg.Value
		checkTagLengths(c, field, tg.Key, &v)
	}
}

// checkTagsText checks the characters and prefixes of every tag.
func checkTagsText(tags []Tag) *Error {
	for _, tg := range tags {
		if err := checkTagText(tg); err != nil {
			return err
		}
	}
	return nil
}

// checkTagText rejects a tag with characters tags may not hold, or a key
// with the reserved aws: prefix.
func checkTagText(tg Tag) *Error {
	if !tagPattern.MatchString(tg.Key) || !tagPattern.MatchString(tg.Value) {
		return invalidParam("Tag keys and values may only contain letters, digits, white space and the characters + - = . _ : / @")
	}
	if strings.HasPrefix(tg.Key, "aws:") {
		return invalidParam("The prefix aws: is reserved for AWS use and cannot be used in a tag key")
	}
	return nil
}

// updateTags replaces the tags of the table arn names with f's result,
// persisting the table's metadata as UpdateTable does.
func (s *Store) updateTags(arn *string, f func([]Tag) ([]Tag, *Error)) *Error {
	for {
		t, err := s.arnTable(arn)
		if err != nil {
			return err
		}
		if done, err := s.updateTagsOf(t, f); done {
			return err
		}
		// The table was replaced (or deleted) meanwhile: look it up again.
	}
}

func (s *Store) updateTagsOf(t *table, f func([]Tag) ([]Tag, *Error)) (bool, *Error) {
	t.ddl.Lock()
	defer t.ddl.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tables[t.meta.Name] != t {
		return false, nil
	}
	m := *t.meta
	tags, err := f(append([]Tag(nil), m.Tags...))
	if err != nil {
		return true, err
	}
	m.Tags = tags
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.putMeta(b, &m); err != nil {
		return true, internal(err)
	}
	if err := b.Commit(s.wo); err != nil {
		return true, internal(err)
	}
	s.tables[m.Name] = newTable(&m)
	return true, nil
}

// TagResource adds tags to a table, replacing the values of keys it has.
func (s *Store) TagResource(in *TagResourceInput) (*TagResourceOutput, error) {
	if _, _, err := s.arnTableName(in.ResourceArn); err != nil {
		return nil, err
	}
	var c constraintErrors
	if in.Tags == nil {
		c.add("Value null at 'tags' failed to satisfy constraint: Member must not be null")
	}
	checkTagList(&c, in.Tags)
	if err := c.err(); err != nil {
		return nil, err
	}
	if len(in.Tags) == 0 {
		return nil, validationf("Atleast one Tag needs to be provided as Input.")
	}
	if err := checkTagsText(in.Tags); err != nil {
		return nil, err
	}
	err := s.updateTags(in.ResourceArn, func(tags []Tag) ([]Tag, *Error) {
		for _, tg := range in.Tags {
			found := false
			for i := range tags {
				if tags[i].Key == tg.Key {
					tags[i].Value, found = tg.Value, true
				}
			}
			if !found {
				tags = append(tags, tg)
			}
		}
		if len(tags) > maxTags {
			return nil, invalidParam("The number of tags exceeds the limit of %d", maxTags)
		}
		return tags, nil
	})
	if err != nil {
		return nil, err
	}
	return &TagResourceOutput{}, nil
}

// UntagResource removes tags from a table; keys it does not have are
// ignored.
func (s *Store) UntagResource(in *UntagResourceInput) (*TagResourceOutput, error) {
	if _, _, err := s.arnTableName(in.ResourceArn); err != nil {
		return nil, err
	}
	var c constraintErrors
	if in.TagKeys == nil {
		c.add("Value null at 'tagKeys' failed to satisfy constraint: Member must not be null")
	}
	for i, k := range in.TagKeys {
		checkTagLengths(&c, fmt.Sprintf("tagKeys.%d.member", i+1), k, nil)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if len(in.TagKeys) == 0 {
		return nil, validationf("Atleast one Tag Key needs to be provided as Input.")
	}
	drop := map[string]bool{}
	for _, k := range in.TagKeys {
		drop[k] = true
	}
	err := s.updateTags(in.ResourceArn, func(tags []Tag) ([]Tag, *Error) {
		out := tags[:0]
		for _, tg := range tags {
			if !drop[tg.Key] {
				out = append(out, tg)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return &TagResourceOutput{}, nil
}

// ListTagsOfResource lists the tags of a table.
func (s *Store) ListTagsOfResource(in *ListTagsOfResourceInput) (*ListTagsOfResourceOutput, error) {
	t, err := s.arnTable(in.ResourceArn)
	if err != nil {
		return nil, err
	}
	tags := append([]Tag{}, t.meta.Tags...)
	return &ListTagsOfResourceOutput{Tags: tags}, nil
}
