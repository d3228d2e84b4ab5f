package market

import (
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// fromStream converts a stream image to the DynamoDB item type.
func fromStream(img map[string]streamtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	out := make(map[string]ddbtypes.AttributeValue, len(img))
	for k, v := range img {
		out[k] = convert(v)
	}
	return out
}

func convert(v streamtypes.AttributeValue) ddbtypes.AttributeValue {
	switch x := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return &ddbtypes.AttributeValueMemberS{Value: x.Value}
	case *streamtypes.AttributeValueMemberN:
		return &ddbtypes.AttributeValueMemberN{Value: x.Value}
	case *streamtypes.AttributeValueMemberB:
		return &ddbtypes.AttributeValueMemberB{Value: x.Value}
	case *streamtypes.AttributeValueMemberBOOL:
		return &ddbtypes.AttributeValueMemberBOOL{Value: x.Value}
	case *streamtypes.AttributeValueMemberNULL:
		return &ddbtypes.AttributeValueMemberNULL{Value: x.Value}
	case *streamtypes.AttributeValueMemberSS:
		return &ddbtypes.AttributeValueMemberSS{Value: x.Value}
	case *streamtypes.AttributeValueMemberNS:
		return &ddbtypes.AttributeValueMemberNS{Value: x.Value}
	case *streamtypes.AttributeValueMemberBS:
		return &ddbtypes.AttributeValueMemberBS{Value: x.Value}
	case *streamtypes.AttributeValueMemberL:
		l := make([]ddbtypes.AttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = convert(e)
		}
		return &ddbtypes.AttributeValueMemberL{Value: l}
	case *streamtypes.AttributeValueMemberM:
		return &ddbtypes.AttributeValueMemberM{Value: fromStream(x.Value)}
	}
	return &ddbtypes.AttributeValueMemberNULL{Value: true}
}
