package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// Notification channels are items of the USER table beside their user's
// item: PK = <user id>, SK = "CHANNEL#<channel id>", so that a user's
// channels are one Query and one of them one GetItem, and the table's
// email index (on `email`, which they never carry) does not see them.
// The user's channelCount, updated in the same transaction as the put or
// delete, bounds their number (MaxChannels).
const skChannel = "CHANNEL#"

// MaxChannels is the most notification channels a user may have.
const MaxChannels = 20

// maxDeliveryError bounds the delivery error kept on a channel.
const maxDeliveryError = 500

// Channel is a user's notification channel (a CHANNEL# item).
type Channel struct {
	ID     string            `json:"id"`
	Type   string            `json:"type"`
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	// Default channels receive the alerts of checks that name none.
	Default   bool   `json:"default"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	// LastDelivery is the outcome of the last delivery attempt (an alert
	// after its retries, or a test); nil before the first.
	LastDelivery *Delivery `json:"lastDelivery,omitempty"`
}

// Delivery is a channel's last delivery outcome.
type Delivery struct {
	At    string `json:"at"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func parseChannel(it map[string]av) Channel {
	c := Channel{
		ID: strings.TrimPrefix(ddbitem.String(it, "SK"), skChannel), Type: ddbitem.String(it, "type"), Name: ddbitem.String(it, "name"),
		Config: map[string]string{}, CreatedAt: ddbitem.String(it, "createdAt"), UpdatedAt: ddbitem.String(it, "updatedAt"),
	}
	if b, ok := it["isDefault"].(*types.AttributeValueMemberBOOL); ok {
		c.Default = b.Value
	}
	if m, ok := it["config"].(*types.AttributeValueMemberM); ok {
		for k, v := range m.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				c.Config[k] = s.Value
			}
		}
	}
	if at := ddbitem.String(it, "lastDeliveryAt"); at != "" {
		c.LastDelivery = &Delivery{At: at, Error: ddbitem.String(it, "lastDeliveryError")}
		if b, ok := it["lastDeliveryOk"].(*types.AttributeValueMemberBOOL); ok {
			c.LastDelivery.OK = b.Value
		}
	}
	return c
}

func configValue(cfg map[string]string) av {
	m := make(map[string]av, len(cfg))
	for k, v := range cfg {
		m[k] = ddbitem.S(v)
	}
	return &types.AttributeValueMemberM{Value: m}
}

// CreateChannel stores a new channel of userID (its ID, CreatedAt and
// UpdatedAt are set here), in one transaction with the user's
// channelCount increment conditioned on the count being under
// MaxChannels: the bound holds however many creates race. The caller
// validates Type and Config.
func (s *Store) CreateChannel(ctx context.Context, userID string, c Channel) (Channel, error) {
	id, err := s.randomID("chn_", 12)
	if err != nil {
		return Channel{}, err
	}
	now := ddbitem.FormatTime(s.now())
	c.ID, c.CreatedAt, c.UpdatedAt, c.LastDelivery = id, now, now, nil
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.names.Users),
			Key:                       key(userID, skUser),
			UpdateExpression:          aws.String("SET channelCount = if_not_exists(channelCount, :zero) + :one"),
			ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(channelCount) OR channelCount < :max)"),
			ExpressionAttributeValues: map[string]av{":zero": ddbitem.N(0), ":one": ddbitem.N(1), ":max": ddbitem.N(MaxChannels)},
		}},
		{Put: &types.Put{
			TableName: aws.String(s.names.Users),
			Item: map[string]av{
				"PK": ddbitem.S(userID), "SK": ddbitem.S(skChannel + id), "type": ddbitem.S(c.Type), "name": ddbitem.S(c.Name),
				"config": configValue(c.Config), "isDefault": ddbitem.Bool(c.Default),
				"createdAt": ddbitem.S(now), "updatedAt": ddbitem.S(now),
			},
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		if _, gerr := s.GetUser(ctx, userID); gerr != nil {
			return Channel{}, gerr
		}
		return Channel{}, fmt.Errorf("%w: %d notification channels at most", ErrLimit, MaxChannels)
	}
	if err != nil {
		return Channel{}, fmt.Errorf("checks: create channel: %w", err)
	}
	return c, nil
}

// GetChannel reads one of userID's channels (ErrNotFound for another
// user's: the key holds the user).
func (s *Store) GetChannel(ctx context.Context, userID, id string) (Channel, error) {
	if userID == "" || id == "" {
		return Channel{}, fmt.Errorf("%w: channel", ErrNotFound)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.names.Users), Key: key(userID, skChannel+id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Channel{}, fmt.Errorf("checks: get channel: %w", err)
	}
	if out.Item == nil {
		return Channel{}, fmt.Errorf("%w: channel %s", ErrNotFound, id)
	}
	return parseChannel(out.Item), nil
}

// ListChannels returns userID's channels in id order.
func (s *Store) ListChannels(ctx context.Context, userID string) ([]Channel, error) {
	var (
		out   []Channel
		start map[string]av
	)
	for {
		res, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.names.Users),
			KeyConditionExpression:    aws.String("PK = :u AND begins_with(SK, :p)"),
			ExpressionAttributeValues: map[string]av{":u": ddbitem.S(userID), ":p": ddbitem.S(skChannel)},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("checks: list channels: %w", err)
		}
		for _, it := range res.Items {
			out = append(out, parseChannel(it))
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// UpdateChannel replaces a channel's name, config and default flag (its
// type and delivery status stay).
func (s *Store) UpdateChannel(ctx context.Context, userID string, c Channel) (Channel, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Users), Key: key(userID, skChannel+c.ID),
		UpdateExpression:         aws.String("SET #n = :n, config = :c, isDefault = :d, updatedAt = :now"),
		ConditionExpression:      aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames: map[string]string{"#n": "name"},
		ExpressionAttributeValues: map[string]av{":n": ddbitem.S(c.Name), ":c": configValue(c.Config), ":d": ddbitem.Bool(c.Default),
			":now": ddbitem.S(ddbitem.FormatTime(s.now()))},
		ReturnValues: types.ReturnValueAllNew,
	})
	if ddbitem.ConditionFailed(err) {
		return Channel{}, fmt.Errorf("%w: channel %s", ErrNotFound, c.ID)
	}
	if err != nil {
		return Channel{}, fmt.Errorf("checks: update channel: %w", err)
	}
	return parseChannel(out.Attributes), nil
}

// DeleteChannel deletes a channel and frees its slot, in one transaction.
// Checks that name it skip it from then on (AlertChannels).
func (s *Store) DeleteChannel(ctx context.Context, userID, id string) error {
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.names.Users), Key: key(userID, skChannel+id),
			ConditionExpression: aws.String("attribute_exists(PK)"),
		}},
		{Update: &types.Update{
			TableName: aws.String(s.names.Users), Key: key(userID, skUser),
			UpdateExpression:          aws.String("SET channelCount = channelCount - :one"),
			ConditionExpression:       aws.String("channelCount > :zero"),
			ExpressionAttributeValues: map[string]av{":zero": ddbitem.N(0), ":one": ddbitem.N(1)},
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: channel %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("checks: delete channel: %w", err)
	}
	return nil
}

// RecordChannelDelivery records a channel's last delivery outcome at at:
// failure "" is a success; a failure is kept on one line, cut to 500
// bytes. A channel deleted meanwhile is skipped.
func (s *Store) RecordChannelDelivery(ctx context.Context, userID, id string, at time.Time, failure string) error {
	update := "SET lastDeliveryAt = :at, lastDeliveryOk = :ok REMOVE lastDeliveryError"
	values := map[string]av{":at": ddbitem.S(ddbitem.FormatTime(at)), ":ok": ddbitem.Bool(failure == "")}
	if failure != "" {
		update = "SET lastDeliveryAt = :at, lastDeliveryOk = :ok, lastDeliveryError = :e"
		values[":e"] = ddbitem.S(OneLine(failure, maxDeliveryError))
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.names.Users), Key: key(userID, skChannel+id),
		UpdateExpression: aws.String(update), ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: values,
	})
	if err != nil && !ddbitem.ConditionFailed(err) {
		return fmt.Errorf("checks: record channel delivery: %w", err)
	}
	return nil
}

// AlertChannels returns the channels an alert of check c goes to: the
// channels c names that still exist or, when it names none (or none of
// them exists any more), its user's default channels.
func (s *Store) AlertChannels(ctx context.Context, c Check) ([]Channel, error) {
	var out []Channel
	for _, id := range c.Channels {
		ch, err := s.GetChannel(ctx, c.UserID, id)
		if err == nil {
			out = append(out, ch)
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	all, err := s.ListChannels(ctx, c.UserID)
	if err != nil {
		return nil, err
	}
	for _, ch := range all {
		if ch.Default {
			out = append(out, ch)
		}
	}
	return out, nil
}

// OneLine joins s's lines with spaces and cuts it to at most n bytes (on
// a rune boundary, "…" marking the cut).
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
