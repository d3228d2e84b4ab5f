package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/quarrydb/quarry/internal/platform/ddbitem"
)

// ErrQuota is the answer to a write that would take a company past one
// of its quotas (the bytes of its uploaded images).
var ErrQuota = errors.New("eecar: quota exceeded")

// ImageUsage is what a company's uploaded images take: the extension item
// PK COMPANY#{id}, SK IMAGES, next to one item per image at
// SK IMAGE#{key} (its size and upload time). The counters move in the
// same transaction as the image items, so they always add up.
type ImageUsage struct {
	Bytes int64 `json:"imageBytes"`
	Count int64 `json:"imageCount"`
}

// ReserveImage records an image of size bytes under the company before its
// bytes are stored, and counts it against quota (bytes; 0 or less: no
// quota). fresh is false when the company had already recorded this key
// (the same bytes uploaded again), which costs nothing more. A company
// whose images would pass quota gets ErrQuota and nothing is recorded.
func (s *Store) ReserveImage(ctx context.Context, companyID, imageKey string, size, quota int64) (fresh bool, err error) {
	if size <= 0 {
		return false, fmt.Errorf("%w: image size %d", ErrInvalid, size)
	}
	cond := "attribute_not_exists(imageBytes) OR imageBytes <= :room"
	vals := map[string]av{":b": ddbitem.N(size), ":one": ddbitem.N(1)}
	if quota > 0 {
		if size > quota {
			return false, fmt.Errorf("%w: an image of %d bytes is over the quota of %d bytes for images", ErrQuota, size, quota)
		}
		vals[":room"] = ddbitem.N(quota - size)
	} else {
		cond = ""
	}
	upd := &types.Update{
		TableName: aws.String(s.table), Key: key("COMPANY#"+companyID, "IMAGES"),
		UpdateExpression:          aws.String("ADD imageBytes :b, imageCount :one"),
		ExpressionAttributeValues: vals,
	}
	if cond != "" {
		upd.ConditionExpression = aws.String(cond)
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName: aws.String(s.table),
			Item: map[string]av{
				"PK": ddbitem.S("COMPANY#" + companyID), "SK": ddbitem.S("IMAGE#" + imageKey),
				"size": ddbitem.N(size), "createdAt": ddbitem.S(ddbitem.FormatTime(s.Now())),
			},
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		}},
		{Update: upd},
	}})
	if r := ddbitem.CancelReasons(err); len(r) == 2 {
		switch {
		case r[0] == "ConditionalCheckFailed":
			return false, nil
		case r[1] == "ConditionalCheckFailed":
			return false, fmt.Errorf("%w: the company's images would take more than its quota of %d bytes; delete some (DELETE /eecar/images/{key})", ErrQuota, quota)
		}
	}
	if err != nil {
		return false, fmt.Errorf("eecar: reserve image: %w", err)
	}
	return true, nil
}

// ReleaseImage removes a company's record of an image and gives its bytes
// back to the quota. It fails with ErrNotFound when the company has no
// such image (never uploaded, or another company's).
func (s *Store) ReleaseImage(ctx context.Context, companyID, imageKey string) error {
	k := key("COMPANY#"+companyID, "IMAGE#"+imageKey)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("eecar: image record: %w", err)
	}
	n, ok := out.Item["size"].(*types.AttributeValueMemberN)
	if !ok {
		return fmt.Errorf("%w: image %s", ErrNotFound, imageKey)
	}
	size, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return fmt.Errorf("eecar: image record %s: size %q", imageKey, n.Value)
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName: aws.String(s.table), Key: k,
			ConditionExpression:       aws.String("#size = :b"),
			ExpressionAttributeNames:  map[string]string{"#size": "size"},
			ExpressionAttributeValues: map[string]av{":b": n},
		}},
		{Update: &types.Update{
			TableName: aws.String(s.table), Key: key("COMPANY#"+companyID, "IMAGES"),
			UpdateExpression:          aws.String("ADD imageBytes :neg, imageCount :minus"),
			ExpressionAttributeValues: map[string]av{":neg": ddbitem.N(-size), ":minus": ddbitem.N(-1)},
		}},
	}})
	if r := ddbitem.CancelReasons(err); len(r) > 0 && r[0] == "ConditionalCheckFailed" {
		return fmt.Errorf("%w: image %s", ErrNotFound, imageKey)
	}
	if err != nil {
		return fmt.Errorf("eecar: release image: %w", err)
	}
	return nil
}

// ImageUsageOf returns what a company's uploaded images take.
func (s *Store) ImageUsageOf(ctx context.Context, companyID string) (ImageUsage, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key("COMPANY#"+companyID, "IMAGES"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return ImageUsage{}, fmt.Errorf("eecar: image usage: %w", err)
	}
	var u ImageUsage
	if n, ok := out.Item["imageBytes"].(*types.AttributeValueMemberN); ok {
		u.Bytes, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	if n, ok := out.Item["imageCount"].(*types.AttributeValueMemberN); ok {
		u.Count, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	return u, nil
}
