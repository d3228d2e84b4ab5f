package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// A status page's settings and its incidents are items of the USER table
// beside their user's item, as channels and maintenance windows are:
// PK = <user id>, SK = "PAGE" (the settings) and SK = "INCIDENT#<id>" (an
// incident, its updates a list in the item). Another user's incident is
// therefore not found by its id. Incident ids are random; their order is
// their createdAt.
const (
	skPage     = "PAGE"
	skIncident = "INCIDENT#"
)

// Bounds of a status page's settings and incidents.
const (
	// MaxIncidents is the most incidents a user keeps: creating one more
	// deletes the oldest resolved one, or is refused when all are open.
	MaxIncidents = 50
	// MaxIncidentUpdates is the most updates (the first included) an
	// incident holds.
	MaxIncidentUpdates = 20
)

// Incident statuses, in their usual order.
const (
	IncidentInvestigating = "investigating"
	IncidentIdentified    = "identified"
	IncidentMonitoring    = "monitoring"
	IncidentResolved      = "resolved"
)

// IncidentStatuses are the statuses an incident update may give.
var IncidentStatuses = []string{IncidentInvestigating, IncidentIdentified, IncidentMonitoring, IncidentResolved}

// StatusPageSettings are what a user's public status page shows besides
// their checks: a title, a description and the groups of checks. Without
// groups the page lists every check; with groups only the checks of a
// group, under its name.
type StatusPageSettings struct {
	Title       string        `json:"title" dynamodbav:"title"`
	Description string        `json:"description" dynamodbav:"description"`
	Groups      []StatusGroup `json:"groups" dynamodbav:"groups"`
}

// StatusGroup is a named group of a status page: the checks it names and
// those carrying one of its tags (ignoring case).
type StatusGroup struct {
	Name     string   `json:"name" dynamodbav:"name"`
	Tags     []string `json:"tags" dynamodbav:"tags"`
	CheckIDs []string `json:"checkIds" dynamodbav:"checkIds"`
}

// Covers reports whether c belongs to g.
func (g StatusGroup) Covers(c Check) bool {
	if slices.Contains(g.CheckIDs, c.ID) {
		return true
	}
	return slices.ContainsFunc(g.Tags, func(t string) bool {
		return slices.ContainsFunc(c.Tags, func(ct string) bool { return strings.EqualFold(ct, t) })
	})
}

// Incident is an incident a user publishes on their status page, with its
// timeline of updates (oldest first). Status is the last update's.
type Incident struct {
	ID         string           `json:"id" dynamodbav:"-"`
	Title      string           `json:"title" dynamodbav:"title"`
	Status     string           `json:"status" dynamodbav:"incidentStatus"`
	CreatedAt  string           `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt  string           `json:"updatedAt" dynamodbav:"updatedAt"`
	ResolvedAt string           `json:"resolvedAt,omitempty" dynamodbav:"resolvedAt,omitempty"`
	Updates    []IncidentUpdate `json:"updates" dynamodbav:"updates"`
}

// IncidentUpdate is one entry of an incident's timeline.
type IncidentUpdate struct {
	At      string `json:"at" dynamodbav:"at"`
	Status  string `json:"status" dynamodbav:"status"`
	Message string `json:"message" dynamodbav:"message"`
}

// StatusPageSettings returns userID's status page settings (zero ones,
// with empty groups, when never set).
func (s *Store) StatusPageSettings(ctx context.Context, userID string) (StatusPageSettings, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.names.Users), Key: key(userID, skPage), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return StatusPageSettings{}, fmt.Errorf("checks: status page settings: %w", err)
	}
	var p StatusPageSettings
	if out.Item != nil {
		if err := attributevalue.UnmarshalMap(out.Item, &p); err != nil {
			return StatusPageSettings{}, fmt.Errorf("checks: status page settings: %w", err)
		}
	}
	if p.Groups == nil {
		p.Groups = []StatusGroup{}
	}
	for i := range p.Groups {
		if p.Groups[i].Tags == nil {
			p.Groups[i].Tags = []string{}
		}
		if p.Groups[i].CheckIDs == nil {
			p.Groups[i].CheckIDs = []string{}
		}
	}
	return p, nil
}

// PutStatusPageSettings replaces userID's status page settings (the
// caller validates them); ErrNotFound for an unknown user.
func (s *Store) PutStatusPageSettings(ctx context.Context, userID string, p StatusPageSettings) error {
	item, err := attributevalue.MarshalMap(p)
	if err != nil {
		return fmt.Errorf("checks: status page settings: %w", err)
	}
	item["PK"], item["SK"] = ddbitem.S(userID), ddbitem.S(skPage)
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.names.Users), Key: key(userID, skUser), ConditionExpression: aws.String("attribute_exists(PK)")}},
		{Put: &types.Put{TableName: aws.String(s.names.Users), Item: item}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: user %s", ErrNotFound, userID)
	}
	if err != nil {
		return fmt.Errorf("checks: put status page settings: %w", err)
	}
	return nil
}

func parseIncident(it map[string]av) (Incident, error) {
	var in Incident
	if err := attributevalue.UnmarshalMap(it, &in); err != nil {
		return Incident{}, fmt.Errorf("checks: incident: %w", err)
	}
	in.ID = strings.TrimPrefix(ddbitem.String(it, "SK"), skIncident)
	if in.Updates == nil {
		in.Updates = []IncidentUpdate{}
	}
	return in, nil
}

// ListIncidents returns userID's incidents, open ones first, then newest
// first.
func (s *Store) ListIncidents(ctx context.Context, userID string) ([]Incident, error) {
	var (
		out   []Incident
		start map[string]av
	)
	for {
		res, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.names.Users),
			KeyConditionExpression:    aws.String("PK = :u AND begins_with(SK, :p)"),
			ExpressionAttributeValues: map[string]av{":u": ddbitem.S(userID), ":p": ddbitem.S(skIncident)},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("checks: list incidents: %w", err)
		}
		for _, it := range res.Items {
			in, err := parseIncident(it)
			if err != nil {
				return nil, err
			}
			out = append(out, in)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		start = res.LastEvaluatedKey
	}
	slices.SortFunc(out, func(a, b Incident) int {
		ao, bo := a.Status != IncidentResolved, b.Status != IncidentResolved
		if ao != bo {
			if ao {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// GetIncident returns one of userID's incidents (ErrNotFound for an
// unknown or another user's).
func (s *Store) GetIncident(ctx context.Context, userID, id string) (Incident, error) {
	if id == "" {
		return Incident{}, fmt.Errorf("%w: incident", ErrNotFound)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.names.Users), Key: key(userID, skIncident+id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Incident{}, fmt.Errorf("checks: get incident: %w", err)
	}
	if out.Item == nil {
		return Incident{}, fmt.Errorf("%w: incident %s", ErrNotFound, id)
	}
	return parseIncident(out.Item)
}

// CreateIncident stores a new incident of userID whose first update is
// first (the caller validates title and update; ID, times and Status are
// set here). When the user already keeps MaxIncidents, the oldest
// resolved one is deleted in the same transaction; when none of them is
// resolved the create fails with ErrLimit.
func (s *Store) CreateIncident(ctx context.Context, userID, title string, first IncidentUpdate) (Incident, error) {
	if _, err := s.GetUser(ctx, userID); err != nil {
		return Incident{}, err
	}
	have, err := s.ListIncidents(ctx, userID)
	if err != nil {
		return Incident{}, err
	}
	id, err := s.randomID("inc_", 12)
	if err != nil {
		return Incident{}, err
	}
	now := ddbitem.FormatTime(s.now())
	first.At = now
	in := Incident{ID: id, Title: title, Status: first.Status, CreatedAt: now, UpdatedAt: now, Updates: []IncidentUpdate{first}}
	if first.Status == IncidentResolved {
		in.ResolvedAt = now
	}
	item, err := attributevalue.MarshalMap(in)
	if err != nil {
		return Incident{}, fmt.Errorf("checks: incident: %w", err)
	}
	item["PK"], item["SK"] = ddbitem.S(userID), ddbitem.S(skIncident+id)
	items := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(s.names.Users), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}}}
	if len(have) >= MaxIncidents {
		// have is open first, then newest first: the last is the oldest
		// resolved one, if any is resolved.
		last := have[len(have)-1]
		if last.Status != IncidentResolved {
			return Incident{}, fmt.Errorf("%w: %d incidents at most, and all are open", ErrLimit, MaxIncidents)
		}
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.names.Users), Key: key(userID, skIncident+last.ID),
			ConditionExpression:       aws.String("attribute_exists(PK) AND incidentStatus = :r"),
			ExpressionAttributeValues: map[string]av{":r": ddbitem.S(IncidentResolved)}}})
	}
	if _, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
		if len(ddbitem.CancelReasons(err)) > 0 {
			return Incident{}, fmt.Errorf("%w: the incidents changed meanwhile; try again", ErrState)
		}
		return Incident{}, fmt.Errorf("checks: create incident: %w", err)
	}
	return in, nil
}

// AddIncidentUpdate appends u to one of userID's incidents (its time set
// here) and makes u.Status the incident's: resolved sets resolvedAt, any
// other status reopens it. ErrNotFound for an unknown or another user's
// incident; ErrLimit when it holds MaxIncidentUpdates already.
func (s *Store) AddIncidentUpdate(ctx context.Context, userID, id string, u IncidentUpdate) (Incident, error) {
	if id == "" {
		return Incident{}, fmt.Errorf("%w: incident", ErrNotFound)
	}
	u.At = ddbitem.FormatTime(s.now())
	uv, err := attributevalue.MarshalMap(u)
	if err != nil {
		return Incident{}, fmt.Errorf("checks: incident update: %w", err)
	}
	expr := "SET #u = list_append(#u, :u), incidentStatus = :s, updatedAt = :at"
	if u.Status == IncidentResolved {
		expr += ", resolvedAt = :at"
	} else {
		expr += " REMOVE resolvedAt"
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Users), Key: key(userID, skIncident+id),
		UpdateExpression:         aws.String(expr),
		ConditionExpression:      aws.String("attribute_exists(PK) AND size(#u) < :max"),
		ExpressionAttributeNames: map[string]string{"#u": "updates"},
		ExpressionAttributeValues: map[string]av{":u": &types.AttributeValueMemberL{Value: []av{&types.AttributeValueMemberM{Value: uv}}},
			":s": ddbitem.S(u.Status), ":at": ddbitem.S(u.At), ":max": ddbitem.N(MaxIncidentUpdates)},
		ReturnValues: types.ReturnValueAllNew,
	})
	if ddbitem.ConditionFailed(err) {
		if _, gerr := s.GetIncident(ctx, userID, id); gerr != nil {
			return Incident{}, gerr
		}
		return Incident{}, fmt.Errorf("%w: %d updates per incident at most", ErrLimit, MaxIncidentUpdates)
	}
	if err != nil {
		return Incident{}, fmt.Errorf("checks: add incident update: %w", err)
	}
	return parseIncident(out.Attributes)
}
