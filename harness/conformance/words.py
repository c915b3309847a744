"""The words a decoder's mistake is named with, strings alone, so that naming a finding loads no decoder: the
known misreadings' names, as a diagnosis names a finding (channel-first on FCR heads alone has its own; the
misreadings themselves are :mod:`harness.conformance.misreadings`, which holds every one of these names to
one of its misreadings), and the words of the failures a diagnosis quotes."""

FCR_CHANNEL_FIRST = "FCR head read as channel-first (FCR is channel-last on the host)"
PAIRED_ACROSS_GRIDS = (
    "box and class heads paired across grids (paired by output order or name, not by grid and channels)"
)
ANCHORS_BY_ORDER = (
    "anchor groups given to the outputs by their order or name (they go by grid: config.anchors is stride ascending)"
)
SIXTEEN_AS_EIGHT = "read as 8-bit (a 16-bit output's buffer taken byte by byte for its codes)"

SIXTEEN_BIT_READ_AS_EIGHT = "sixteen_bit_read_as_eight"
READ_CHANNEL_FIRST = "read_channel_first"
FCR_READ_CHANNEL_FIRST = "fcr_read_channel_first"
DFL_BINS_INTERLEAVED = "dfl_bins_interleaved"
ANCHORED_READ_CLASS_MAJOR = "anchored_read_class_major"
SIGMOID_APPLIED_TWICE = "sigmoid_applied_twice"
OBJECTNESS_MISSING = "objectness_left_out"
ANCHOR_GROUPS_REVERSED = "anchor_groups_reversed"
ANCHORS_HEIGHT_WIDTH = "anchors_taken_as_height_width"
DEFAULT_ANCHORS_TAKEN = "default_anchors_used"
SSD_CODING_X_FIRST = "ssd_box_coding_read_x_first"
SSD_SCALE_FACTORS_LEFT_OUT = "ssd_scale_factors_left_out"
SSD_ANCHORS_HEIGHT_WIDTH = "ssd_anchors_taken_as_height_width"
SSD_BACKGROUND_AS_CLASS = "ssd_background_read_as_a_class"
SIZES_WITHOUT_THE_EXP = "box_sizes_without_the_exp"
SSD_SCORES_SOFTMAXED = "ssd_sigmoid_scores_read_as_softmax"
SSD_BACKGROUND_AS_FIRST_CLASS = "ssd_background_read_as_the_first_class"
QUANT_INFO_LEFT_OUT = "quant_info_left_out"
BOX_CHANNELS_READ_Y_FIRST = "box_channels_read_y_first"
CLASSES_TAKEN_AS_PROBABILITIES = "sigmoid_left_out"
HEADS_PAIRED_BY_OUTPUT_ORDER = "heads_paired_by_output_order"
ANCHOR_GROUPS_BY_OUTPUT_ORDER = "anchor_groups_by_output_order"
BOXES_WRITTEN_Y_FIRST = "boxes_written_y_first"
CENTRES_HALF_CELL_UP_LEFT = "centres_half_a_cell_up_left"
CENTRES_HALF_CELL_DOWN_RIGHT = "centres_half_a_cell_down_right"
CENTRES_AS_YOLOV3 = "centres_coded_as_yolov3"

# Every name a reproduction can give, in the order the misreadings are tried.
REPRODUCED_NAMES = (
    SIXTEEN_BIT_READ_AS_EIGHT,
    QUANT_INFO_LEFT_OUT,
    READ_CHANNEL_FIRST,
    DFL_BINS_INTERLEAVED,
    ANCHORED_READ_CLASS_MAJOR,
    BOX_CHANNELS_READ_Y_FIRST,
    SIGMOID_APPLIED_TWICE,
    OBJECTNESS_MISSING,
    FCR_READ_CHANNEL_FIRST,
    ANCHOR_GROUPS_REVERSED,
    ANCHORS_HEIGHT_WIDTH,
    DEFAULT_ANCHORS_TAKEN,
    SSD_CODING_X_FIRST,
    SSD_SCALE_FACTORS_LEFT_OUT,
    SSD_ANCHORS_HEIGHT_WIDTH,
    SSD_BACKGROUND_AS_CLASS,
    SIZES_WITHOUT_THE_EXP,
    SSD_SCORES_SOFTMAXED,
    SSD_BACKGROUND_AS_FIRST_CLASS,
    CLASSES_TAKEN_AS_PROBABILITIES,
    HEADS_PAIRED_BY_OUTPUT_ORDER,
    ANCHOR_GROUPS_BY_OUTPUT_ORDER,
    BOXES_WRITTEN_Y_FIRST,
    CENTRES_AS_YOLOV3,
    CENTRES_HALF_CELL_UP_LEFT,
    CENTRES_HALF_CELL_DOWN_RIGHT,
)
