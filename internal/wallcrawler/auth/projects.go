package auth

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Project is an item of the wallcrawler-projects table.
type Project struct {
	ID             string
	Name           string
	OwnerID        string
	DefaultTimeout int // seconds
	Concurrency    int // maximum concurrent sessions
	Status         string
	BillingTier    string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// ActiveSessions is the counter that enforces Concurrency (see
	// AcquireSlot); an addition to the documented schema.
	ActiveSessions int
	// UsageBrowserMs and UsageProxyBytes count the project's ended
	// sessions' browser time and all proxied bytes (additions: session
	// items are deleted by TTL, the usage must outlive them).
	UsageBrowserMs, UsageProxyBytes int64
}

// CreateProjectInput describes a new project. Zero values mean defaults.
type CreateProjectInput struct {
	// ID is the project id; default "proj_" followed by 24 random hex digits.
	ID string
	// Name is required.
	Name    string
	OwnerID string
	// DefaultTimeout in seconds; default DefaultSessionTimeout.
	DefaultTimeout int
	// Concurrency; default DefaultConcurrency.
	Concurrency int
	BillingTier string
}

// CreateProject writes a new ACTIVE project. It fails with ErrExists when
// the id is taken and ErrInvalid on bad input.
func (s *Store) CreateProject(ctx context.Context, in CreateProjectInput) (Project, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" {
		return Project{}, fmt.Errorf("%w: project name is required", ErrInvalid)
	}
	if in.DefaultTimeout == 0 {
		in.DefaultTimeout = DefaultSessionTimeout
	}
	if in.Concurrency == 0 {
		in.Concurrency = DefaultConcurrency
	}
	if in.DefaultTimeout < 0 || in.Concurrency < 0 {
		return Project{}, fmt.Errorf("%w: defaultTimeout and concurrency must be positive", ErrInvalid)
	}
	if in.ID == "" {
		id, err := s.randomID("proj_", 12)
		if err != nil {
			return Project{}, err
		}
		in.ID = id
	}
	now := s.now()
	p := Project{
		ID: in.ID, Name: in.Name, OwnerID: in.OwnerID,
		DefaultTimeout: in.DefaultTimeout, Concurrency: in.Concurrency,
		Status: StatusActive, BillingTier: in.BillingTier,
		CreatedAt: now, UpdatedAt: now,
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.names.Projects),
		Item:                projectItem(p),
		ConditionExpression: aws.String("attribute_not_exists(projectId)"),
	})
	if ddbitem.ConditionFailed(err) {
		return Project{}, fmt.Errorf("%w: project %s", ErrExists, in.ID)
	}
	if err != nil {
		return Project{}, fmt.Errorf("auth: create project: %w", err)
	}
	return p, nil
}

// GetProject reads a project (strongly consistent); ErrNotFound if absent.
func (s *Store) GetProject(ctx context.Context, id string) (Project, error) {
	if id == "" {
		return Project{}, fmt.Errorf("%w: project %q", ErrNotFound, id)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.names.Projects),
		Key:            map[string]types.AttributeValue{"projectId": &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Project{}, fmt.Errorf("auth: get project: %w", err)
	}
	if out.Item == nil {
		return Project{}, fmt.Errorf("%w: project %s", ErrNotFound, id)
	}
	return parseProject(out.Item), nil
}

// ListProjects returns every project (a table scan; meant for
// administration, not for request paths).
func (s *Store) ListProjects(ctx context.Context) ([]Project, error) {
	var out []Project
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{TableName: aws.String(s.names.Projects)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("auth: list projects: %w", err)
		}
		for _, it := range page.Items {
			out = append(out, parseProject(it))
		}
	}
	return out, nil
}

// SetProjectStatus sets a project's status to StatusActive or
// StatusInactive; ErrNotFound if the project does not exist.
func (s *Store) SetProjectStatus(ctx context.Context, id, status string) error {
	if status != StatusActive && status != StatusInactive {
		return fmt.Errorf("%w: status %q", ErrInvalid, status)
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.names.Projects),
		Key:                      map[string]types.AttributeValue{"projectId": &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:         aws.String("SET #s = :s, updatedAt = :u"),
		ConditionExpression:      aws.String("attribute_exists(projectId)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: status},
			":u": &types.AttributeValueMemberS{Value: ddbitem.FormatTime(s.now())},
		},
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: project %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("auth: set project status: %w", err)
	}
	return nil
}

// UpdateProjectInput changes a project; nil fields stay as they are.
type UpdateProjectInput struct {
	Name *string
	// OwnerID and BillingTier: an empty string removes the attribute.
	OwnerID     *string
	BillingTier *string
	// Status is StatusActive or StatusInactive. An INACTIVE project
	// authorizes no request, so no new session starts; running ones go on
	// until they end.
	Status         *string
	Concurrency    *int
	DefaultTimeout *int // seconds
}

// UpdateProject changes the given attributes of a project and its
// updatedAt with one write, and returns the project as stored afterwards.
// It fails with ErrNotFound when the project does not exist and
// ErrInvalid on bad input.
func (s *Store) UpdateProject(ctx context.Context, id string, in UpdateProjectInput) (Project, error) {
	names := map[string]string{}
	values := map[string]types.AttributeValue{":u": ddbitem.S(ddbitem.FormatTime(s.now()))}
	set := []string{"updatedAt = :u"}
	var remove []string
	str := func(attr string, v *string, optional bool) {
		if v == nil {
			return
		}
		ph := "#" + attr
		names[ph] = attr
		if *v == "" && optional {
			remove = append(remove, ph)
			return
		}
		values[":"+attr] = ddbitem.S(*v)
		set = append(set, ph+" = :"+attr)
	}
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" {
			return Project{}, fmt.Errorf("%w: project name cannot be empty", ErrInvalid)
		}
		in.Name = &n
	}
	if in.Status != nil && *in.Status != StatusActive && *in.Status != StatusInactive {
		return Project{}, fmt.Errorf("%w: status %q (want %s or %s)", ErrInvalid, *in.Status, StatusActive, StatusInactive)
	}
	str("name", in.Name, false)
	str("ownerId", in.OwnerID, true)
	str("billingTier", in.BillingTier, true)
	str("status", in.Status, false)
	for attr, v := range map[string]*int{"concurrency": in.Concurrency, "defaultTimeout": in.DefaultTimeout} {
		if v == nil {
			continue
		}
		if *v <= 0 {
			return Project{}, fmt.Errorf("%w: %s must be positive", ErrInvalid, attr)
		}
		names["#"+attr] = attr
		values[":"+attr] = ddbitem.N(int64(*v))
		set = append(set, "#"+attr+" = :"+attr)
	}
	update := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		update += " REMOVE " + strings.Join(remove, ", ")
	}
	names["#id"] = "projectId"
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.names.Projects),
		Key:                       map[string]types.AttributeValue{"projectId": ddbitem.S(id)},
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddbitem.ConditionFailed(err) {
		return Project{}, fmt.Errorf("%w: project %s", ErrNotFound, id)
	}
	if err != nil {
		return Project{}, fmt.Errorf("auth: update project %s: %w", id, err)
	}
	return parseProject(out.Attributes), nil
}

// AcquireSlot atomically takes one of the project's concurrency slots: a
// single conditional UpdateItem increments activeSessions only while it is
// below concurrency and the project is ACTIVE, so concurrent callers (in any
// number of processes) can never exceed the limit. It fails with
// ErrConcurrencyLimit when all slots are taken, ErrForbidden when the
// project is inactive and ErrNotFound when it does not exist. Every
// successful call MUST be matched by one ReleaseSlot.
func (s *Store) AcquireSlot(ctx context.Context, projectID string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.names.Projects),
		Key:              map[string]types.AttributeValue{"projectId": &types.AttributeValueMemberS{Value: projectID}},
		UpdateExpression: aws.String("SET activeSessions = if_not_exists(activeSessions, :zero) + :one"),
		// A project seeded by hand may lack status (read as ACTIVE) and
		// concurrency (read as DefaultConcurrency), as parseProject does.
		ConditionExpression: aws.String("attribute_exists(projectId) AND (attribute_not_exists(#s) OR #s = :active) AND " +
			"(attribute_not_exists(activeSessions) OR activeSessions < concurrency OR " +
			"(attribute_not_exists(concurrency) AND activeSessions < :defc))"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero":   &types.AttributeValueMemberN{Value: "0"},
			":one":    &types.AttributeValueMemberN{Value: "1"},
			":active": &types.AttributeValueMemberS{Value: StatusActive},
			":defc":   ddbitem.N(DefaultConcurrency),
		},
	})
	if err == nil {
		return nil
	}
	if !ddbitem.ConditionFailed(err) {
		return fmt.Errorf("auth: acquire slot: %w", err)
	}
	p, gerr := s.GetProject(ctx, projectID)
	switch {
	case gerr != nil:
		return gerr
	case p.Status != StatusActive:
		return fmt.Errorf("%w: project %s is %s", ErrForbidden, projectID, p.Status)
	default:
		return fmt.Errorf("%w: %d of %d sessions in use", ErrConcurrencyLimit, p.ActiveSessions, p.Concurrency)
	}
}

// ReleaseSlot gives back a slot taken by AcquireSlot. Releasing when no slot
// is held is a no-op.
func (s *Store) ReleaseSlot(ctx context.Context, projectID string) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.names.Projects),
		Key:                 map[string]types.AttributeValue{"projectId": &types.AttributeValueMemberS{Value: projectID}},
		UpdateExpression:    aws.String("SET activeSessions = activeSessions - :one"),
		ConditionExpression: aws.String("activeSessions > :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero": &types.AttributeValueMemberN{Value: "0"},
			":one":  &types.AttributeValueMemberN{Value: "1"},
		},
	})
	if err != nil && !ddbitem.ConditionFailed(err) {
		return fmt.Errorf("auth: release slot: %w", err)
	}
	return nil
}

// AddUsage adds browser milliseconds and proxied bytes to a project's
// usage counters.
func (s *Store) AddUsage(ctx context.Context, projectID string, browserMs, proxyBytes int64) error {
	if browserMs <= 0 && proxyBytes <= 0 {
		return nil
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.names.Projects),
		Key:                       map[string]types.AttributeValue{"projectId": ddbitem.S(projectID)},
		UpdateExpression:          aws.String("ADD usageBrowserMs :ms, usageProxyBytes :b"),
		ConditionExpression:       aws.String("attribute_exists(projectId)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":ms": ddbitem.N(max(browserMs, 0)), ":b": ddbitem.N(max(proxyBytes, 0))},
	})
	if ddbitem.ConditionFailed(err) {
		return fmt.Errorf("%w: project %s", ErrNotFound, projectID)
	}
	if err != nil {
		return fmt.Errorf("auth: add usage: %w", err)
	}
	return nil
}

func (s *Store) randomID(prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.opts.Rand, b); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return prefix + hex.EncodeToString(b), nil
}

func projectItem(p Project) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"projectId":      &types.AttributeValueMemberS{Value: p.ID},
		"name":           &types.AttributeValueMemberS{Value: p.Name},
		"defaultTimeout": &types.AttributeValueMemberN{Value: strconv.Itoa(p.DefaultTimeout)},
		"concurrency":    &types.AttributeValueMemberN{Value: strconv.Itoa(p.Concurrency)},
		"status":         &types.AttributeValueMemberS{Value: p.Status},
		"createdAt":      &types.AttributeValueMemberS{Value: ddbitem.FormatTime(p.CreatedAt)},
		"updatedAt":      &types.AttributeValueMemberS{Value: ddbitem.FormatTime(p.UpdatedAt)},
		"activeSessions": &types.AttributeValueMemberN{Value: strconv.Itoa(p.ActiveSessions)},
	}
	if p.OwnerID != "" {
		it["ownerId"] = &types.AttributeValueMemberS{Value: p.OwnerID}
	}
	if p.BillingTier != "" {
		it["billingTier"] = &types.AttributeValueMemberS{Value: p.BillingTier}
	}
	return it
}

// parseProject decodes a project item. The original design's manual
// seeding may leave out attributes: a project without status is ACTIVE,
// one without concurrency has DefaultConcurrency.
func parseProject(it map[string]types.AttributeValue) Project {
	p := Project{
		ID:              ddbitem.String(it, "projectId"),
		Name:            ddbitem.String(it, "name"),
		OwnerID:         ddbitem.String(it, "ownerId"),
		DefaultTimeout:  num(it, "defaultTimeout"),
		Concurrency:     num(it, "concurrency"),
		Status:          ddbitem.String(it, "status"),
		BillingTier:     ddbitem.String(it, "billingTier"),
		CreatedAt:       ddbitem.ParseTime(ddbitem.String(it, "createdAt")),
		UpdatedAt:       ddbitem.ParseTime(ddbitem.String(it, "updatedAt")),
		ActiveSessions:  num(it, "activeSessions"),
		UsageBrowserMs:  ddbitem.Int(it, "usageBrowserMs"),
		UsageProxyBytes: ddbitem.Int(it, "usageProxyBytes"),
	}
	if p.Status == "" {
		p.Status = StatusActive
	}
	if _, ok := it["concurrency"]; !ok {
		p.Concurrency = DefaultConcurrency
	}
	return p
}

func num(it map[string]types.AttributeValue, k string) int {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseFloat(v.Value, 64)
		if err == nil {
			return int(n)
		}
	}
	return 0
}

func strList(it map[string]types.AttributeValue, k string) []string {
	var out []string
	switch v := it[k].(type) {
	case *types.AttributeValueMemberL:
		for _, e := range v.Value {
			if s, ok := e.(*types.AttributeValueMemberS); ok {
				out = append(out, s.Value)
			}
		}
	case *types.AttributeValueMemberSS:
		out = append(out, v.Value...)
	}
	return out
}
