// HailoRT's YOLOv5 bbox-only post-process op (hailort: libhailort/src/net_flow/ops/yolov5_bbox_only_post_process.cpp),
// the one a HEF whose YOLOv5 NMS op is compiled with bbox_decoding_only runs on the host: every proposal's box,
// objectness and class values, no NMS. Driven from tests/backends/test_hailort_oracle_bbox_only.py; built and linked
// as yolov8_nms.cpp is, and read with yolov5_nms.cpp's request. One frame per request on stdin:
//
//   request: "CLASSES MAX_PER_CLASS SCORE_TH IOU_TH IMAGE_H IMAGE_W TYPE NSTRIDES\n", then per stride
//            "NANCHORS W0 H0 W1 H1 ...\n" (anchors in input pixels) and its one anchored head,
//            "H W C PH PW PC ZP SCALE MIN MAX NBYTES\n" + NBYTES bytes (the device frame, NHCW);
//            the i-th head is the op's input "head<i>"
//   answer:  "STATUS NBYTES\n" + the output's vstream info (uint32 format order, format type, shape height,
//            width, features; float32 quant zero point, scale, limvals min, max) + the op's float32 buffer
//            (STATUS: hailo_status, 0 = success; nothing after it otherwise)
//
// The output's shape is the one HailoRT gives it reading a HEF (hailort: libhailort/src/hef/hef.cpp,
// create_yolov5_bbox_only_op_metadata, compute_num_of_proposals): {1, anchors x cells of every head,
// 5 + classes}; the op does not check it.
#include "net_flow/ops/yolov5_bbox_only_post_process.hpp"
#include "driver_io.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace hailort;
using namespace hailort::net_flow;

static std::vector<uint8_t> vstream_record(const hailo_vstream_info_t &info)
{
    const uint32_t numbers[] = {static_cast<uint32_t>(info.format.order), static_cast<uint32_t>(info.format.type),
        info.shape.height, info.shape.width, info.shape.features};
    const float32_t quant[] = {info.quant_info.qp_zp, info.quant_info.qp_scale, info.quant_info.limvals_min,
        info.quant_info.limvals_max};
    std::vector<uint8_t> record(sizeof(numbers) + sizeof(quant));
    memcpy(record.data(), numbers, sizeof(numbers));
    memcpy(record.data() + sizeof(numbers), quant, sizeof(quant));
    return record;
}

int main()
{
    std::ios::sync_with_stdio(false);
    uint32_t classes, max_per_class, type, nstrides;
    double score_th, iou_th;
    float image_h, image_w;
    while (std::cin >> classes >> max_per_class >> score_th >> iou_th >> image_h >> image_w >> type >> nstrides) {
        std::unordered_map<std::string, BufferMetaData> inputs_metadata;
        std::vector<std::vector<uint8_t>> frames(nstrides);
        YoloPostProcessConfig yolov5_config{};
        yolov5_config.image_height = image_h;
        yolov5_config.image_width = image_w;
        uint32_t proposals = 0;
        for (uint32_t i = 0; i < nstrides; i++) {
            uint32_t nanchors;
            std::cin >> nanchors;
            std::vector<int> anchors(2 * nanchors);
            for (auto &value : anchors) {
                std::cin >> value;
            }
            const auto name = "head" + std::to_string(i);
            inputs_metadata[name] = read_head(static_cast<hailo_format_type_t>(type), frames[i]);
            yolov5_config.anchors[name] = anchors;
            proposals += nanchors * inputs_metadata[name].shape.height * inputs_metadata[name].shape.width;
        }
        BufferMetaData output{};
        output.format = hailo_format_t{HAILO_FORMAT_TYPE_FLOAT32, HAILO_FORMAT_ORDER_NHWC, HAILO_FORMAT_FLAGS_NONE};
        output.shape = {1, proposals, 5 + classes};
        const NmsPostProcessConfig nms_config(score_th, iou_th, max_per_class, max_per_class * classes, classes,
            false, 0, true);
        std::vector<uint8_t> buffer(proposals * (5 + classes) * sizeof(float), 0), answer;
        auto metadata = Yolov5BboxOnlyOpMetadata::create(inputs_metadata, {{"bbox", output}}, nms_config, yolov5_config, "net");
        hailo_status status = metadata.status();
        if (HAILO_SUCCESS == status) {
            auto op_metadata = std::static_pointer_cast<Yolov5BboxOnlyOpMetadata>(metadata.value());
            auto info = op_metadata->get_output_vstream_info();
            auto op = YOLOv5BboxOnlyPostProcessOp::create(op_metadata);
            status = HAILO_SUCCESS != info.status() ? info.status() : op.status();
            if (HAILO_SUCCESS == status) {
                std::map<std::string, MemoryView> inputs, outputs{{"bbox", MemoryView(buffer.data(), buffer.size())}};
                for (uint32_t i = 0; i < nstrides; i++) {
                    inputs["head" + std::to_string(i)] = MemoryView(frames[i].data(), frames[i].size());
                }
                status = op.value()->execute(inputs, outputs);
                answer = vstream_record(info.value());
                answer.insert(answer.end(), buffer.begin(), buffer.end());
            }
        }
        write_answer(status, answer);
    }
    return 0;
}
